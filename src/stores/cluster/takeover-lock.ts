/**
 * The takeover lock of a cluster socket (socket-link.ts): held while a process removes a dead
 * host's socket file, so two processes never both remove and bind it. The lock is a Unix socket
 * published at `<path>.lock` only once it listens (publish-socket.ts: link(2) is exclusive, as
 * bind is) on which its holder answers LOCK_HELLO: the lock proves its holder alive by something
 * only a live holder can do. A file there whose socket does not answer in time (ECONNREFUSED:
 * nobody listens any more, or it is not a socket; a timeout; a wrong answer) is stale however
 * fresh it is and whatever pid it names, so a squatter touching the file, or a dead holder whose
 * pid was reused, cannot block election. (A lock bound at the path itself refused connections
 * between its bind and its listen: under load a live holder was judged stale there, its lock
 * removed, and a second process took the lock beside it.)
 *
 * A stale lock is removed by renaming it aside and checking it is still the file judged (same
 * inode and birth time), so a live lock taken meanwhile is never removed. A lock file owned by
 * another user is never removed: the takeover fails with an error saying so.
 */
import { linkSync, lstatSync, renameSync, type Stats, unlinkSync } from "node:fs";
import net from "node:net";
import { StoreError } from "../../core/errors.ts";
import { publishSocket, sameFile } from "./publish-socket.ts";

/** What a live holder answers on its lock socket. */
export const LOCK_HELLO = "sluice-takeover-lock";
/**
 * How long a lock's holder has to answer. A holder awaits only short timers and connects while
 * it holds the lock, so it answers in milliseconds; this bound is for a loaded machine.
 */
export const LOCK_ANSWER_MS = 2000;
/** Bytes a lock path adds to the socket path. */
export const LOCK_SUFFIX = ".lock";

/** Node's system errors carry a code. */
const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/**
 * Takes the takeover lock of socket `path`: resolves with its release, with "busy" when a live
 * holder answered (it is taking over: wait for it), or undefined when the next attempt may take
 * it (a stale lock was just removed, or the lock was released meanwhile).
 */
export async function takeoverLock(path: string): Promise<(() => void) | "busy" | undefined> {
  const file = `${path}${LOCK_SUFFIX}`;
  try {
    return await hold(file);
  } catch (error) {
    if (codeOf(error) !== "EADDRINUSE") throw error;
  }
  let seen: Stats;
  try {
    seen = lstatSync(file);
  } catch (error) {
    if (codeOf(error) === "ENOENT") return undefined; // released meanwhile: the next attempt takes it
    throw error;
  }
  if (typeof process.getuid === "function" && seen.uid !== process.getuid()) {
    throw new StoreError(
      `the takeover lock ${file} belongs to another user (uid ${seen.uid}); sluice will not use or remove it`,
    );
  }
  if (seen.isSocket()) {
    const answer = await answers(file);
    // gone: released meanwhile, and a file there now (its inode number possibly reused) is a
    // newer lock that was never judged.
    if (answer === "live") return "busy";
    if (answer === "gone") return undefined;
  }
  removeIfSame(file, seen);
  return undefined;
}

/** Publishes the lock socket at `file` (rejects with EADDRINUSE when a file is there) and answers on it. */
async function hold(file: string): Promise<() => void> {
  const lock = await publishSocket(
    file,
    (c) => {
      c.on("error", () => {});
      c.end(`${LOCK_HELLO} ${process.pid}\n`);
    },
    0o600,
  );
  // Removes the public file only while it is this lock (publish-socket.ts): a holder judged dead
  // whose lock was replaced leaves the newer lock in place.
  return () => lock.close();
}

/**
 * Whether a live holder answers LOCK_HELLO on the lock socket `file` within LOCK_ANSWER_MS
 * ("live"), the file is gone ("gone"), or it is there and nobody answers as a holder ("stale").
 */
function answers(file: string): Promise<"live" | "gone" | "stale"> {
  return new Promise((resolveAnswer) => {
    const socket = net.connect(file);
    let text = "";
    const done = (answer: "live" | "gone" | "stale") => {
      clearTimeout(timer);
      socket.destroy();
      resolveAnswer(answer);
    };
    const timer = setTimeout(() => done("stale"), LOCK_ANSWER_MS);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      const nl = text.indexOf("\n");
      if (nl !== -1) done(text.slice(0, nl).split(" ")[0] === LOCK_HELLO ? "live" : "stale");
      else if (text.length > 256) done("stale");
    });
    socket.on("end", () => done("stale"));
    // ECONNREFUSED: nobody listens, and a lock is published only once it listens, so its holder
    // is gone. Any other error: nobody answers.
    socket.on("error", (error) => done(codeOf(error) === "ENOENT" ? "gone" : "stale"));
  });
}

/**
 * Removes the lock `file` judged stale as `judged`. Between the judging and the removal a live
 * process may have taken a new lock there, so the file is first renamed aside (atomic: whatever
 * is there) and removed only if it is the file judged; another goes back. The file judged is
 * told by its inode and its birth time: a lock released meanwhile frees its inode, which the
 * file system may give at once to the next lock (ext4 does).
 */
function removeIfSame(file: string, judged: Stats): void {
  const aside = `${file}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // gone meanwhile
  }
  try {
    const now = lstatSync(aside);
    if (!(sameFile(now, judged) && now.birthtimeMs === judged.birthtimeMs)) linkSync(aside, file); // EEXIST only if a newer lock is there
  } catch {
    // a newer lock is in place
  } finally {
    unlinkSync(aside);
  }
}

/**
 * The takeover lock of a cluster socket (socket-link.ts): held while a process removes a dead
 * host's socket file, so two processes never both remove and bind it. The lock is a Unix socket
 * bound at `<path>.lock` (bind creates the file exclusively) on which its holder answers
 * LOCK_HELLO: the lock proves its holder alive by something only a live holder can do. A file
 * there whose socket does not answer in time (ECONNREFUSED: nobody listens, or it is not a
 * socket; a timeout; a wrong answer) is stale however fresh it is and whatever pid it names,
 * so a squatter touching the file, or a dead holder whose pid was reused, cannot block election.
 *
 * A stale lock is removed by renaming it aside and checking it is still the file judged (same
 * inode), so a live lock taken meanwhile is never removed. A lock file owned by another user is
 * never removed: the takeover fails with an error saying so.
 */
import { linkSync, lstatSync, renameSync, statSync, unlinkSync } from "node:fs";
import net from "node:net";
import { StoreError } from "../../core/errors.ts";

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

/** A file's identity. */
interface FileId {
  readonly dev: number;
  readonly ino: number;
}

const sameFile = (a: FileId, b: FileId) => a.dev === b.dev && a.ino === b.ino;

/**
 * Takes the takeover lock of socket `path`: resolves with its release, or undefined when a live
 * holder has it (or a stale one was just removed: the next attempt takes it).
 */
export async function takeoverLock(path: string): Promise<(() => void) | undefined> {
  const file = `${path}${LOCK_SUFFIX}`;
  try {
    return await hold(file);
  } catch (error) {
    if (codeOf(error) !== "EADDRINUSE") throw error;
  }
  let seen: ReturnType<typeof lstatSync>;
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
  if (seen.isSocket() && (await answers(file))) return undefined; // a live holder
  removeIfSame(file, seen);
  return undefined;
}

/** Binds the lock socket at `file` (rejects with EADDRINUSE when a file is there) and answers on it. */
function hold(file: string): Promise<() => void> {
  return new Promise((resolveHold, reject) => {
    const server = net.createServer((c) => {
      c.on("error", () => {});
      c.end(`${LOCK_HELLO} ${process.pid}\n`);
    });
    server.once("error", reject);
    let umask: number | undefined;
    try {
      umask = process.umask(0o177); // owner-only from the moment the file exists
    } catch {}
    try {
      server.listen({ path: file, exclusive: true }, () => {
        server.off("error", reject);
        server.on("error", () => {});
        server.unref(); // the takeover's own work keeps the process alive while it holds the lock
        let ours: FileId;
        try {
          ours = statSync(file);
        } catch (error) {
          server.close();
          reject(error);
          return;
        }
        resolveHold(() => {
          // Closing a Unix socket server unlinks its path, whatever file is there now (libuv): a
          // holder judged dead whose lock was replaced leaves its server open (unreferenced)
          // rather than remove the live lock of another process.
          let still = false;
          try {
            still = sameFile(statSync(file), ours);
          } catch {}
          if (still) server.close();
        });
      });
    } finally {
      if (umask !== undefined) process.umask(umask);
    }
  });
}

/** Whether a live holder answers LOCK_HELLO on the lock socket `file` within LOCK_ANSWER_MS. */
function answers(file: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const socket = net.connect(file);
    let text = "";
    const done = (live: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolveAnswer(live);
    };
    const timer = setTimeout(() => done(false), LOCK_ANSWER_MS);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      const nl = text.indexOf("\n");
      if (nl !== -1) done(text.slice(0, nl).split(" ")[0] === LOCK_HELLO);
      else if (text.length > 256) done(false);
    });
    socket.on("end", () => done(false));
    // ENOENT: released meanwhile, which is as good as stale here (the file judged is gone, and
    // removeIfSame removes only that file). Any other error: nobody answers.
    socket.on("error", () => done(false));
  });
}

/**
 * Removes the lock `file` judged stale as `judged`. Between the judging and the removal a live
 * process may have taken a new lock there, so the file is first renamed aside (atomic: whatever
 * is there) and removed only if it is the file judged; another goes back.
 */
function removeIfSame(file: string, judged: FileId): void {
  const aside = `${file}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // gone meanwhile
  }
  try {
    if (!sameFile(lstatSync(aside), judged)) linkSync(aside, file); // EEXIST only if a newer lock is there
  } catch {
    // a newer lock is in place
  } finally {
    unlinkSync(aside);
  }
}

/**
 * Listening on a Unix socket path so that a file at the path answers for as long as its owner
 * lives. bind() creates the file and listen() makes it accept, in two system calls: a process
 * preempted between them leaves a file that refuses connections (ECONNREFUSED) while it is alive,
 * which is exactly how a dead owner's file looks. On a loaded machine the processes that race for
 * the takeover lock (or the host's socket) after a host died met that window: a live holder's
 * lock was judged stale and removed, and two processes held the lock at once; a host preempted
 * before listening had its file unlinked by a takeover and then took the new host's file for its
 * own (two hosts, each deciding its own checks).
 *
 * So the socket is bound and listening under a private name in the same directory first, and
 * only then published: link(2) to the public path, which fails with EEXIST when any file is
 * there (exclusive, as bind is). A file at the public path therefore refuses connections only
 * when its owner is gone (or closed it): refusal is proof of death. The published file's identity
 * is the listening socket's own inode, which the open socket keeps from being reused.
 */
import { chmodSync, linkSync, renameSync, statSync, unlinkSync } from "node:fs";
import net from "node:net";
import { dirname, join } from "node:path";

/** A file's identity (device and inode). */
export interface FileId {
  readonly dev: number;
  readonly ino: number;
}

/** Whether two identities name the same file. */
export const sameFile = (a: FileId, b: FileId): boolean => a.dev === b.dev && a.ino === b.ino;

/** A socket listening and published at its public path. */
export interface Published {
  /** The listening server (unreferenced: it does not keep the process alive). */
  readonly server: net.Server;
  /** The identity of the published file (this socket's inode). */
  readonly id: FileId;
  /** Whether the public path still names this socket. */
  ours(): boolean;
  /** Stops listening; removes the public file first if it still names this socket. */
  close(): void;
}

/** Longest socket path portable to macOS (104 bytes with the terminator). */
const MAX_PATH = 103;

/** Node's system errors carry a code. */
const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/**
 * Listens on a private name beside `path`, then publishes it at `path` with mode `mode`.
 * Rejects with an EADDRINUSE error when a file is already at `path` (as listen does).
 */
export async function publishSocket(
  path: string,
  onConnection: (connection: net.Socket) => void,
  mode: number,
): Promise<Published> {
  for (let attempt = 0; ; attempt++) {
    const hidden = privateName(path);
    let server: net.Server;
    try {
      server = await listenAt(hidden, onConnection);
    } catch (error) {
      if (codeOf(error) === "EADDRINUSE" && attempt < 5) continue; // a private name taken: draw again
      throw error;
    }
    let id: FileId;
    try {
      // Before publishing, so the public file never has a wider mode than asked for a moment.
      chmodSync(hidden, mode);
      const st = statSync(hidden);
      id = { dev: st.dev, ino: st.ino };
      linkSync(hidden, path);
    } catch (error) {
      server.close(); // unlinks the private name (libuv), never the public path
      if (codeOf(error) === "EEXIST") {
        throw Object.assign(new Error(`listen EADDRINUSE: address already in use ${path}`), {
          code: "EADDRINUSE",
        });
      }
      throw error;
    }
    try {
      unlinkSync(hidden); // the socket stays reachable at the public path (same inode)
    } catch {}
    const ours = () => {
      try {
        return sameFile(statSync(path), id);
      } catch {
        return false;
      }
    };
    return {
      server,
      id,
      ours,
      close() {
        // The open socket keeps its inode from being reused, so a file with this identity at the
        // path is ours; checked before closing, while that still holds.
        if (ours()) {
          try {
            unlinkSync(path);
          } catch {}
        }
        server.close();
      },
    };
  }
}

/**
 * Removes the socket file at `path`, judged dead (it refused a connection), only if it is dead
 * still: it is renamed aside first (atomic, whatever is there), and a file there that accepts a
 * connection is live and goes back (unless another file was published meanwhile: then its owner,
 * whose file it no longer is, steps down). No inode number is trusted: a removed file's number
 * may be given at once to the next file (ext4 does).
 */
export async function removeIfDead(path: string): Promise<void> {
  const aside = privateName(path);
  try {
    renameSync(path, aside);
  } catch {
    return; // gone meanwhile
  }
  try {
    (await connectTo(aside)).destroy();
    try {
      linkSync(aside, path); // live: back in place
    } catch {}
  } catch {
    // refused (or not a socket): dead
  } finally {
    try {
      unlinkSync(aside);
    } catch {}
  }
}

/** Connects to the socket at `path`; rejects with the system error (ENOENT, ECONNREFUSED, ...). */
export function connectTo(path: string): Promise<net.Socket> {
  return new Promise((resolveSocket, reject) => {
    const socket = net.connect(path);
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolveSocket(socket);
    });
  });
}

/**
 * A fresh name in `path`'s directory (link(2) needs the same file system), short enough to bind
 * on macOS whatever the length of `path` (at most 98 bytes: cluster-store.ts).
 */
function privateName(path: string): string {
  const dir = dirname(path);
  const random = Math.random().toString(36).slice(2, 10).padEnd(8, "0");
  const long = join(dir, `.sluice-${random}`);
  if (Buffer.byteLength(long) <= MAX_PATH) return long;
  return join(dir, `.${random.slice(0, Math.max(4, MAX_PATH - Buffer.byteLength(dir) - 2))}`);
}

/** Listens on `file` (owner-only from the moment it exists), exclusively even in a cluster worker. */
function listenAt(file: string, onConnection: (connection: net.Socket) => void): Promise<net.Server> {
  return new Promise((resolveListen, reject) => {
    const server = net.createServer(onConnection);
    server.once("error", reject);
    // Owner-only from the moment the file exists (bind creates it under the umask). process.umask
    // is unavailable in worker threads: there the chmod before publishing alone applies.
    let umask: number | undefined;
    try {
      umask = process.umask(0o177);
    } catch {}
    try {
      // exclusive: in a node:cluster worker (PM2 cluster mode), listen() is otherwise routed to
      // the primary, which shares one handle among every worker asking for the path.
      server.listen({ path: file, exclusive: true }, () => {
        server.off("error", reject);
        server.on("error", () => {}); // after listening, errors concern single connections
        server.unref();
        resolveListen(server);
      });
    } finally {
      if (umask !== undefined) process.umask(umask);
    }
  });
}

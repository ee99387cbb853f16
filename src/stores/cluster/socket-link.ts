/**
 * The local-socket transport of `sluice/cluster`, for processes that have no primary of ours
 * (PM2 cluster mode, or any processes on one machine): the first process to bind the Unix
 * socket path becomes the host and decides with the shared dispatcher on its own MemoryStore;
 * the others connect as clients. Frames are newline-delimited JSON (JSON.stringify never emits
 * a raw newline); a client writes one frame per batch, i.e. one write per event-loop turn.
 *
 * Failover: when the host's connection closes, waiting batches fail (the store's policy then
 * answers) and the next batch starts a new attempt, in which one process binds the path and
 * hosts, with empty state. A socket file left by a dead host (connect: ECONNREFUSED) is removed
 * only under a takeover lock and after checking again that nobody listens, so two processes
 * can never both think they host: one unlinking the file another has just bound.
 */
import { createHash } from "node:crypto";
import { closeSync, lstatSync, openSync, statSync, unlinkSync } from "node:fs";
import net from "node:net";
import { resolve } from "node:path";
import { ArgumentError, StoreError } from "../../errors.ts";
import { MemoryStore, type MemoryStoreOptions } from "../memory/memory-store.ts";
import { createDispatcher, type Dispatcher } from "./dispatcher.ts";
import type { Resyncable, Transport, Waiting } from "./link.ts";
import { type BatchMessage, CHANNEL, isMessage, type ReplyMessage } from "./protocol.ts";

/** Attempts (bind, connect, take over) before a batch fails for want of a host. */
const ATTEMPTS = 20;
/** Longest frame accepted, in characters; a peer sending more is cut off. */
const MAX_FRAME = 64 * 1024 * 1024;
/** A takeover lock file older than this was left by a process that died holding it (non-Linux). */
const STALE_LOCK_MS = 10_000;
/** The host's own batches are decided in-process under this client number. */
const LOCAL = 0;

/** Node's system errors carry a code. */
const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

const links = new Map<string, SocketLink>();

/**
 * The transport for socket `path` in this process (one per path: stores on it share the host or
 * connection, so they must agree on the host's store options).
 */
export function socketLink(path: string, hostOptions: MemoryStoreOptions): SocketLink {
  const full = resolve(path);
  let link = links.get(full);
  if (link === undefined) links.set(full, (link = new SocketLink(full, hostOptions)));
  else if (JSON.stringify(link.hostOptions) !== JSON.stringify(hostOptions)) {
    throw new ArgumentError(
      `another ClusterStore in this process uses ${full} with hostStore ${JSON.stringify(link.hostOptions)} ` +
        `(got ${JSON.stringify(hostOptions)}); stores on one socket share its host`,
    );
  }
  return link;
}

/** One process's end of the socket transport: host or client, re-elected after the host is lost. */
export class SocketLink implements Transport {
  /** Names the host in error messages. */
  readonly peer: string;
  readonly #path: string;
  /** The options of the MemoryStore this process creates when it hosts. */
  readonly hostOptions: MemoryStoreOptions;
  #state: "idle" | "starting" | "host" | "client" = "idle";
  readonly #waiting = new Map<number, Waiting>();
  #outbox: BatchMessage[] = [];
  #nextSeq = 1;
  #socket: net.Socket | undefined;
  #dispatcher: Dispatcher | undefined;
  readonly #stores = new Set<WeakRef<Resyncable>>();

  constructor(path: string, hostOptions: MemoryStoreOptions) {
    this.#path = path;
    this.hostOptions = hostOptions;
    this.peer = `the sluice host at ${path}`;
  }

  /** Whether this process currently hosts the store (for tests and diagnostics). */
  get hosting(): boolean {
    return this.#state === "host";
  }

  /** A sequence number for the next batch (never 0). */
  sequence(): number {
    return this.#nextSeq++;
  }

  /** Stops waiting for `seq`. */
  forget(seq: number): void {
    this.#waiting.delete(seq);
  }

  /** Registers a store to resync with every new host. */
  attach(store: Resyncable): void {
    this.#stores.add(new WeakRef(store));
  }

  /** Sends `message` to the host (deciding it here when this process hosts). */
  post(message: BatchMessage, w?: Waiting): void {
    if (w !== undefined) this.#waiting.set(message.seq, w);
    if (this.#state === "host") this.#decideHere(message);
    else if (this.#state === "client") this.#socket?.write(`${JSON.stringify(message)}\n`);
    else {
      this.#outbox.push(message);
      if (this.#state === "idle") this.#start();
    }
  }

  #start(): void {
    this.#state = "starting";
    this.#elect().then(
      () => {
        // A new host knows none of our rules: register the live ones before anything else.
        const binds = [];
        for (const ref of this.#stores) {
          const store = ref.deref();
          if (store === undefined) this.#stores.delete(ref);
          else binds.push(...store.records());
        }
        const outbox = this.#outbox;
        this.#outbox = [];
        if (binds.length > 0) this.post({ channel: CHANNEL, type: "batch", seq: 0, binds, releases: [], ops: [] });
        for (const message of outbox) this.post(message);
      },
      (error: unknown) => {
        this.#state = "idle";
        this.#outbox = [];
        const reason = error instanceof Error ? error.message : String(error);
        this.#failAll(new StoreError(`could not reach or become ${this.peer}: ${reason}`, { cause: error }));
      },
    );
  }

  /** Becomes the host (binding the path) or a client (connecting to whoever bound it). */
  async #elect(): Promise<void> {
    let last: unknown;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      try {
        await this.#host();
        return;
      } catch (error) {
        if (codeOf(error) !== "EADDRINUSE") throw error;
      }
      try {
        this.#client(await connect(this.#path));
        return;
      } catch (error) {
        last = error;
        // ENOENT: the file went away in between (a takeover): bind again.
        if (codeOf(error) === "ECONNREFUSED") await this.#takeOver();
        else if (codeOf(error) !== "ENOENT") throw error;
      }
    }
    throw last;
  }

  /** Listens on the path; rejects with EADDRINUSE when the file exists (live or stale). */
  #host(): Promise<void> {
    return new Promise((resolveHost, reject) => {
      const server = net.createServer((connection) => this.#serve(connection));
      server.once("error", reject);
      // exclusive: in a node:cluster worker (PM2 cluster mode), listen() is otherwise routed to
      // the primary, which shares one handle among every worker asking for the path: all would host.
      server.listen({ path: this.#path, exclusive: true }, () => {
        server.off("error", reject);
        server.on("error", () => {}); // after listening, errors concern single connections
        // The server does not keep the process alive; connected clients do (see #serve).
        server.unref();
        this.#dispatcher = createDispatcher(new MemoryStore(this.hostOptions));
        this.#state = "host";
        resolveHost();
      });
    });
  }

  /** Serves one client connection: frames in, one write of replies per chunk read. */
  #serve(connection: net.Socket): void {
    const dispatcher = this.#dispatcher as Dispatcher;
    const client = nextClient++;
    connection.on("error", () => {}); // a client that dies mid-write: "close" follows
    connection.on("close", () => dispatcher.disconnect(client));
    readFrames(connection, (frame) => {
      if (!isMessage<BatchMessage>(frame, "batch")) throw new Error("not a sluice batch");
      return dispatcher.handle(client, frame);
    });
  }

  /** Uses `socket`, connected to the host, for every batch until it closes. */
  #client(socket: net.Socket): void {
    this.#socket = socket;
    this.#state = "client";
    // Batches in flight keep the process alive (their timeout timers), an idle connection does not.
    socket.unref();
    socket.on("error", () => {}); // "close" follows and fails what waits
    socket.on("close", () => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      this.#state = "idle";
      this.#failAll(new StoreError(`${this.peer} closed the connection`));
    });
    readFrames(socket, (frame) => {
      if (!isMessage<ReplyMessage>(frame, "reply")) throw new Error("not a sluice reply");
      this.#reply(frame);
      return undefined;
    });
  }

  #decideHere(message: BatchMessage): void {
    const reply = (this.#dispatcher as Dispatcher).handle(LOCAL, message);
    if (reply !== undefined) this.#reply(reply);
  }

  #reply(reply: ReplyMessage): void {
    const w = this.#waiting.get(reply.seq);
    if (w === undefined) return; // answered after its timeout: the policy already decided
    this.#waiting.delete(reply.seq);
    w.settle(reply.results);
  }

  #failAll(error: StoreError): void {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const w of all) w.fail(error);
  }

  /**
   * Removes a socket file nobody listens on, under the takeover lock, after checking again (a
   * process that took over meanwhile must keep its file). Without the lock, two processes that
   * both saw the dead host's file could each unlink and bind, the second removing the first's.
   */
  async #takeOver(): Promise<void> {
    const release = await lock(this.#path);
    if (release === undefined) {
      await pause(5 + Math.random() * 20); // another process is taking over: connect to it next
      return;
    }
    try {
      try {
        (await connect(this.#path)).destroy();
        return; // somebody listens now
      } catch (error) {
        if (codeOf(error) !== "ECONNREFUSED") return; // gone (ENOENT) or otherwise: start over
      }
      let socket: boolean;
      try {
        socket = lstatSync(this.#path).isSocket();
      } catch (error) {
        if (codeOf(error) === "ENOENT") return; // removed meanwhile: bind next
        throw error;
      }
      if (!socket) {
        throw new StoreError(`${this.#path} exists and is not a socket; sluice will not remove it`);
      }
      unlinkSync(this.#path);
    } finally {
      release();
    }
  }
}

let nextClient = LOCAL + 1;

/** Connects to the socket at `path`; rejects with the system error (ENOENT, ECONNREFUSED, ...). */
function connect(path: string): Promise<net.Socket> {
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
 * Reads newline-delimited JSON frames from `socket` and writes back, in one write, the frames
 * `on` returns. A malformed frame, or one `on` throws on, ends the connection.
 */
function readFrames(socket: net.Socket, on: (frame: unknown) => object | undefined): void {
  let buffer = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    let out = "";
    let from = 0;
    try {
      for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n", from)) {
        const answer = on(JSON.parse(buffer.slice(from, nl)));
        from = nl + 1;
        if (answer !== undefined) out += `${JSON.stringify(answer)}\n`;
      }
    } catch {
      socket.destroy();
      return;
    }
    buffer = buffer.slice(from);
    if (out !== "") socket.write(out);
    if (buffer.length > MAX_FRAME) socket.destroy();
  });
}

/**
 * Takes the takeover lock of `path`: resolves with its release, or undefined when another
 * process holds it. On Linux the lock is an abstract socket (no file; the kernel frees it when
 * its holder dies); elsewhere an exclusive lock file, considered abandoned after STALE_LOCK_MS.
 */
function lock(path: string): Promise<(() => void) | undefined> {
  if (process.platform === "linux") {
    const name = `\0sluice-takeover-${createHash("sha256").update(path).digest("hex").slice(0, 32)}`;
    return new Promise((resolveLock, reject) => {
      const server = net.createServer();
      server.once("error", (error) => (codeOf(error) === "EADDRINUSE" ? resolveLock(undefined) : reject(error)));
      server.listen({ path: name, exclusive: true }, () => {
        server.unref();
        resolveLock(() => server.close());
      });
    });
  }
  const file = `${path}.lock`;
  try {
    closeSync(openSync(file, "wx"));
    return Promise.resolve(() => unlinkSync(file));
  } catch (error) {
    if (codeOf(error) !== "EEXIST") throw error;
    try {
      if (Date.now() - statSync(file).mtimeMs > STALE_LOCK_MS) unlinkSync(file);
    } catch {
      // removed meanwhile: the next attempt takes it
    }
    return Promise.resolve(undefined);
  }
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

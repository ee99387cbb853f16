/**
 * The local-socket transport of `sluice/cluster`, for processes that have no primary of ours
 * (PM2 cluster mode, or any processes on one machine): the first process to bind the Unix
 * socket path becomes the host and decides with the shared dispatcher on its own MemoryStore;
 * the others connect as clients. Frames are newline-delimited JSON (JSON.stringify never emits
 * a raw newline); a client writes one frame per batch, i.e. one write per event-loop turn.
 *
 * Failover: when the host's connection closes, waiting batches fail (the store's policy then
 * answers) and the next batch starts a new attempt, in which one process binds the path and
 * hosts, with empty state. A host's socket file appears only once it listens (publish-socket.ts),
 * so a file that refuses connections (ECONNREFUSED) is a dead host's; it is removed only under a
 * takeover lock and after checking again that nobody listens, so two processes can never both
 * think they host: one unlinking the file another has just bound. A host whose path names another
 * socket steps down (checked every FILE_CHECK_MS, and whenever `hosting` is read).
 *
 * Throttles' fleet queues (SPEC §16) live in the host too (../fleet-queue-host.ts): queue calls
 * and replies travel as frames on the same connection, grants for another process are pushed
 * on its connection, and a connection that closes (its process SIGKILLed) gives its tickets and
 * slots back at once. After a re-election each owner opens its queue again at the new host with
 * the grants it holds (../fleet-queue-client.ts, `rejoins`).
 *
 * The socket is a trust boundary: the file is created owner-only (`socketMode` widens it), every
 * frame a peer sends is validated before anything is decided (validate.ts; a bad frame closes
 * that connection and is reported), the takeover lock is an owner-only socket beside the socket
 * on which its holder must answer (takeover-lock.ts), and a host that exits (normally, or on SIGTERM/SIGINT when nothing
 * else handles them) removes its socket file.
 */
import { randomBytes } from "node:crypto";
import { lstatSync } from "node:fs";
import type net from "node:net";
import { resolve } from "node:path";
import { systemClock } from "../../core/clock.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { warn } from "../../core/warn.ts";
import type { QueueTransport } from "../fleet-queue-client.ts";
import { isQueueMessage, type QueueCall, QueueHost, type QueuePush, type QueueReply } from "../fleet-queue-host.ts";
import { MemoryStore, type MemoryStoreOptions } from "../memory/memory-store.ts";
import { createDispatcher, type Dispatcher } from "./dispatcher.ts";
import type { Resyncable, Transport, Waiting } from "./link.ts";
import { type BatchMessage, CHANNEL, isMessage, type PeersMessage, type ReplyMessage } from "./protocol.ts";
import { connectTo, type Published, publishSocket, removeIfDead } from "./publish-socket.ts";
import { takeoverLock } from "./takeover-lock.ts";
import { invalidBatch, invalidQueueCall } from "./validate.ts";

/**
 * How long a host that found a dead host's socket but never knew its clients (no roster: it was
 * not connected to it) holds new leases back for them to come back. Without a roster it cannot
 * wait for each by name; the old host's clients reconnect the moment its connection closes, so a
 * short wait covers them, where waiting `leaseMs` (60 s by default) made a fleet restarted after
 * a crash (its socket file left behind) refuse every lease for a minute.
 */
const NO_ROSTER_SETTLE_MS = 2_000;

/** Attempts (bind, connect, take over) before a batch fails for want of a host. */
const ATTEMPTS = 20;
/**
 * Waits for another process's takeover (its lock answered) that do not count as attempts: 200
 * waits of 25-50 ms, at least 5 s, bound an election behind a holder that never finishes.
 */
const MAX_WAITS = 200;
/** Longest frame accepted, in characters; a peer sending more is cut off. */
export const MAX_FRAME = 16 * 1024 * 1024;
/** How long a refused socket file must stay refused (and the same file) to count as a dead host's. */
const STALE_CHECK_MS = 100;
/** How often a host checks that the socket file is still its own. */
const FILE_CHECK_MS = 250;
/** Default mode of the socket file: only the owner's processes may connect. */
export const DEFAULT_SOCKET_MODE = 0o600;
/** The host's own batches are decided in-process under this client number. */
const LOCAL = 0;

/** Node's system errors carry a code. */
const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

const links = new Map<string, SocketLink>();

/** A fleet queue call waiting for a host, and who hears that it could not be sent. */
interface QueueOut {
  readonly call: QueueCall;
  readonly failed: (error: StoreError) => void;
}

/** A fleet queue owner's ear: replies and pushes, and the loss of the host. */
interface QueueEar {
  readonly hear: (message: unknown) => void;
  readonly lost: () => void;
}

/**
 * The transport for socket `path` in this process (one per path: stores on it share the host or
 * connection, so they must agree on the host's store options).
 */
export function socketLink(
  path: string,
  hostOptions: MemoryStoreOptions,
  socketMode: number = DEFAULT_SOCKET_MODE,
): SocketLink {
  const full = resolve(path);
  let link = links.get(full);
  if (link === undefined) links.set(full, (link = new SocketLink(full, hostOptions, socketMode)));
  else if (link.socketMode !== socketMode) {
    throw new ArgumentError(
      `another ClusterStore in this process uses ${full} with socketMode 0o${link.socketMode.toString(8)} (got 0o${socketMode.toString(8)})`,
    );
  } else if (JSON.stringify(link.hostOptions) !== JSON.stringify(hostOptions)) {
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
  /** The mode the socket file gets when this process hosts. */
  readonly socketMode: number;
  /** The socket this process listens on and published at the path, while it hosts. */
  #published: Published | undefined;
  #state: "idle" | "starting" | "host" | "client" = "idle";
  readonly #waiting = new Map<number, Waiting>();
  #outbox: Array<BatchMessage | QueueOut> = [];
  #nextSeq = 1;
  #socket: net.Socket | undefined;
  #dispatcher: Dispatcher | undefined;
  /** While hosting: the throttles' fleet queues, and the clients' connections (for pushes). */
  #queues: QueueHost | undefined;
  readonly #connections = new Map<number, net.Socket>();
  /** This process's fleet queue owners listening. */
  readonly #ears = new Set<QueueEar>();
  readonly #stores = new Set<WeakRef<Resyncable>>();
  /** This process's peer token: how a new host knows it came back (see "settling" below). */
  readonly #token = randomBytes(12).toString("base64url");
  /** As a client: the tokens of the processes connected to the host, as it last said. */
  #peers: readonly string[] | undefined;
  /** This election found a dead host's socket file (a host whose clients it never knew). */
  #sawDeadHost = false;
  /**
   * While hosting, "settling": processes that held leases at the old host may still run those
   * requests, and this host starts empty. New leases are held back (denied, retryAfterMs the
   * time left) until every process the old host last listed (`#expected`) has come back with its
   * leases, or, for a rule of lease length L, until L ms after this host started (by then every
   * lease the old host granted expired): the bound when a listed process never comes back, or
   * when this host never knew the old host's processes (`#expected` undefined).
   */
  #settling = false;
  #expected: Set<string> | undefined;
  #settleFrom = 0;
  /** How long at most this host holds new leases back: NO_ROSTER_SETTLE_MS without a roster, else leaseMs. */
  #settleFor = Number.POSITIVE_INFINITY;
  /** While hosting: each client connection's peer token (once it sent one). */
  readonly #tokens = new Map<number, string>();
  /**
   * While hosting: every token that came back here. One that comes again (its connection closed
   * with the host alive) holds leases this host already counts: they are not logged twice.
   */
  readonly #seen = new Set<string>();

  constructor(path: string, hostOptions: MemoryStoreOptions, socketMode: number) {
    this.#path = path;
    this.hostOptions = hostOptions;
    this.socketMode = socketMode;
    this.peer = `the sluice host at ${path}`;
  }

  /**
   * Whether this process currently hosts the store (for tests and diagnostics): exact, the path
   * is read now, and a host whose path names another socket steps down at once.
   */
  get hosting(): boolean {
    if (this.#state !== "host") return false;
    if (this.#published?.ours() === true) return true;
    this.#stepDown();
    return false;
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

  /**
   * Sends a batch that waited for an election. One whose caller gave up meanwhile (its timeout
   * fired: the failure policy answered it) goes without its checks, renewals and the like, which
   * would take leases and units nobody holds; its registrations and lease releases still go.
   */
  #postLate(message: BatchMessage): void {
    if (message.seq === 0 || this.#waiting.has(message.seq)) {
      this.post(message);
      return;
    }
    const ops = message.ops.filter((op) => op[4] === "release");
    this.post({ ...message, seq: ops.length === 0 ? 0 : message.seq, ops });
  }

  /** Sends a fleet queue call to the host (handling it here when this process hosts). */
  postQueue(call: QueueCall, failed: (error: StoreError) => void): void {
    if (this.#state === "host") {
      const reply = (this.#queues as QueueHost).handle(LOCAL, call);
      queueMicrotask(() => this.#hearQueue(reply));
    } else if (this.#state === "client") this.#socket?.write(`${JSON.stringify(call)}\n`);
    else {
      this.#outbox.push({ call, failed });
      if (this.#state === "idle") this.#start();
    }
  }

  /** Hears fleet queue replies and pushes until the returned function is called. */
  listenQueue(hear: (message: unknown) => void, lost: () => void): () => void {
    const ear = { hear, lost };
    this.#ears.add(ear);
    return () => this.#ears.delete(ear);
  }

  #hearQueue(message: unknown): void {
    for (const ear of [...this.#ears]) ear.hear(message);
  }

  /** The host is lost (its connection closed, or this process stepped down): every owner hears it. */
  #queueLost(): void {
    for (const ear of [...this.#ears]) ear.lost();
  }

  #start(): void {
    this.#state = "starting";
    this.#elect().then(
      () => {
        // A new host knows none of our rules nor the leases we hold: register them before anything
        // else, with our token (a new host holds back new leases until the old host's processes are back).
        const binds = [];
        const leases = [];
        for (const ref of this.#stores) {
          const store = ref.deref();
          if (store === undefined) this.#stores.delete(ref);
          else {
            binds.push(...store.records());
            leases.push(...store.leases());
          }
        }
        const outbox = this.#outbox;
        this.#outbox = [];
        const resync = this.#token;
        this.post({ channel: CHANNEL, type: "batch", seq: 0, binds, releases: [], ops: [], leases, resync });
        for (const message of outbox) {
          if ("call" in message) this.postQueue(message.call, message.failed);
          else this.#postLate(message);
        }
      },
      (error: unknown) => {
        this.#state = "idle";
        const outbox = this.#outbox;
        this.#outbox = [];
        const reason = error instanceof Error ? error.message : String(error);
        const failure = new StoreError(`could not reach or become ${this.peer}: ${reason}`, { cause: error });
        this.#failAll(failure);
        for (const message of outbox) if ("call" in message) message.failed(failure);
      },
    );
  }

  /** Whether a store still uses this link. */
  #hasStores(): boolean {
    for (const ref of this.#stores) if (ref.deref() !== undefined) return true;
    return false;
  }

  /** Becomes the host (binding the path) or a client (connecting to whoever bound it). */
  async #elect(): Promise<void> {
    this.#sawDeadHost = false;
    let last: unknown;
    let waits = 0;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      try {
        await this.#host();
        return;
      } catch (error) {
        if (codeOf(error) !== "EADDRINUSE") throw error;
      }
      try {
        this.#client(await connectTo(this.#path));
        return;
      } catch (error) {
        last = error;
        // ENOENT: the file went away in between (a takeover): bind again.
        if (codeOf(error) === "ECONNREFUSED") {
          this.#sawDeadHost = true;
          // Waiting for a live lock holder's takeover is not a failed attempt: on a loaded machine
          // it outlasted the attempts of the processes waiting for it (their checks then failed).
          if ((await this.#takeOver()) === "waited" && waits++ < MAX_WAITS) attempt--;
        } else if (codeOf(error) !== "ENOENT") throw error;
      }
    }
    throw last;
  }

  /**
   * Listens on the path (published there only once it listens: publish-socket.ts); rejects with
   * EADDRINUSE when a file is there (live or stale).
   */
  async #host(): Promise<void> {
    const published = await publishSocket(this.#path, (connection) => this.#serve(connection), this.socketMode);
    this.#published = published;
    removeOnExit(this);
    const store = new MemoryStore(this.hostOptions);
    const peers = this.#peers;
    this.#expected = peers === undefined ? undefined : new Set(peers.filter((t) => t !== this.#token));
    this.#settling = peers === undefined ? this.#sawDeadHost : this.#expected?.size !== 0;
    this.#settleFor = peers === undefined ? NO_ROSTER_SETTLE_MS : Number.POSITIVE_INFINITY;
    this.#settleFrom = systemClock.now();
    this.#tokens.clear();
    this.#seen.clear();
    this.#dispatcher = createDispatcher(store, (leaseMs) => this.#holdLeases(leaseMs));
    this.#queues = new QueueHost(store, (client, push) => this.#push(client, push));
    this.#watchFile(published);
    this.#state = "host";
  }

  /** ms left before this host grants leases of `leaseMs` (0: it does). */
  #holdLeases(leaseMs: number): number {
    if (!this.#settling) return 0;
    const left = this.#settleFrom + Math.min(leaseMs, this.#settleFor) - systemClock.now();
    return Math.max(left, 0);
  }

  /** A client came back (its first batch carried `token` and its leases): it is no longer awaited. */
  #cameBack(client: number, token: string): void {
    this.#tokens.set(client, token);
    this.#seen.add(token);
    if (this.#expected?.delete(token) === true && this.#expected.size === 0) this.#settling = false;
    this.#tellPeers();
  }

  /** Tells every client which processes are connected, so whichever hosts next knows whom to await. */
  #tellPeers(): void {
    const message: PeersMessage = { channel: CHANNEL, type: "peers", tokens: [...new Set(this.#tokens.values())] };
    const frame = `${JSON.stringify(message)}\n`;
    for (const c of this.#connections.values()) c.write(frame);
  }

  /**
   * While hosting, checks every FILE_CHECK_MS that the path is still this process's socket (read
   * `hosting` checks too). If it is not (removed by hand, or by a takeover that misjudged this
   * host dead), this host steps down.
   */
  #watchFile(published: Published): void {
    const timer = setInterval(() => {
      if (this.#published !== published) clearInterval(timer);
      else if (!published.ours()) this.#stepDown();
    }, FILE_CHECK_MS);
    timer.unref();
  }

  /**
   * Stops hosting: closes the server and its clients' connections, so they all reconnect to the
   * one host there is, instead of two hosts each deciding part of the traffic. (Closing removes
   * only this process's own file: publish-socket.ts.)
   */
  #stepDown(): void {
    const published = this.#published;
    if (published === undefined || this.#state !== "host") return;
    this.#published = undefined;
    this.#state = "idle";
    this.#dispatcher?.stop();
    this.#dispatcher = undefined;
    this.#queues?.stop();
    this.#queues = undefined;
    published.close();
    for (const c of this.#connections.values()) c.destroy();
    this.#queueLost();
    // Its clients' processes are this one's peers at the host they go to.
    this.#peers = [...new Set(this.#tokens.values())];
    warn(
      `sluice cluster: ${this.#path} is no longer this process's socket; stepping down as host`,
      "SLUICE_CLUSTER_STEP_DOWN",
    );
    // To the host there is, with this process's leases, at once.
    if (this.#hasStores()) this.#start();
  }

  /** Removes the socket file if it is still the one this process bound (called on exit). */
  removeSocket(): void {
    const published = this.#published;
    if (published === undefined || this.#state !== "host") return;
    this.#published = undefined;
    published.close();
  }

  /** Serves one client connection: frames in, one write of replies per chunk read. */
  #serve(connection: net.Socket): void {
    const dispatcher = this.#dispatcher as Dispatcher;
    const queues = this.#queues as QueueHost;
    const client = nextClient++;
    this.#connections.set(client, connection);
    connection.on("error", () => {}); // a client that dies mid-write: "close" follows
    connection.on("close", () => {
      this.#connections.delete(client);
      dispatcher.disconnect(client);
      if (this.#tokens.delete(client) && this.#dispatcher === dispatcher) this.#tellPeers();
      // Its process is gone (or cut off): its tickets leave, its grants' slots are free at once.
      queues.disconnect(client);
    });
    readFrames(
      connection,
      (frame) => {
        if (isQueueMessage<QueueCall>(frame, "queue")) {
          const why = invalidQueueCall(frame);
          if (why !== undefined) throw new Error(why);
          return queues.handle(client, frame);
        }
        const invalid = invalidBatch(frame);
        if (invalid !== undefined) throw new Error(invalid);
        const token = (frame as BatchMessage).resync;
        const again = token !== undefined && this.#seen.has(token);
        const answer = dispatcher.handle(
          client,
          again ? { ...(frame as BatchMessage), leases: [] } : (frame as BatchMessage),
        );
        if (token !== undefined && this.#dispatcher === dispatcher) this.#cameBack(client, token);
        return answer;
      },
      (reason) =>
        warn(`sluice cluster: closed a peer's connection to ${this.#path}: ${reason}`, "SLUICE_CLUSTER_BAD_FRAME"),
    );
  }

  /** Pushes a fleet queue grant to `client` (this process's owners when LOCAL). */
  #push(client: number, push: QueuePush): void {
    if (client === LOCAL) queueMicrotask(() => this.#hearQueue(push));
    else this.#connections.get(client)?.write(`${JSON.stringify(push)}\n`);
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
      this.#queueLost();
      // Back at once, not at the next call: the new host awaits this process's leases.
      if (this.#state === "idle" && this.#hasStores()) this.#start();
    });
    readFrames(socket, (frame) => {
      if (isMessage<PeersMessage>(frame, "peers")) {
        if (Array.isArray(frame.tokens)) this.#peers = frame.tokens.filter((t) => typeof t === "string");
        return undefined;
      }
      if (isQueueMessage<QueueReply>(frame, "queue-reply") || isQueueMessage<QueuePush>(frame, "queue-push")) {
        this.#hearQueue(frame);
        return undefined;
      }
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
  async #takeOver(): Promise<"waited" | undefined> {
    const release = await takeoverLock(this.#path);
    if (release === "busy") {
      // Another process is taking over (two checks STALE_CHECK_MS apart): connect to it next.
      await pause(STALE_CHECK_MS / 4 + Math.random() * (STALE_CHECK_MS / 4));
      return "waited";
    }
    if (release === undefined) {
      await pause(5 + Math.random() * 20); // a stale lock removed, or released: take it next
      return;
    }
    try {
      // This version publishes a host's file only once it listens (publish-socket.ts), so a
      // refusal means its host is gone; a process of an older version binds the path itself and
      // is refused between its bind and its listen: a file refused twice, STALE_CHECK_MS apart,
      // and the same file both times, is a dead host's. It is removed only if it still refuses
      // (removeIfDead): unlinking a live host's file would make two hosts.
      let seen: { dev: number; ino: number } | undefined;
      for (let check = 0; check < 2; check++) {
        if (check > 0) await pause(STALE_CHECK_MS);
        try {
          (await connectTo(this.#path)).destroy();
          return; // somebody listens now
        } catch (error) {
          if (codeOf(error) !== "ECONNREFUSED") return; // gone (ENOENT) or otherwise: start over
        }
        let st: ReturnType<typeof lstatSync>;
        try {
          st = lstatSync(this.#path);
        } catch (error) {
          if (codeOf(error) === "ENOENT") return; // removed meanwhile: bind next
          throw error;
        }
        if (!st.isSocket()) {
          throw new StoreError(`${this.#path} exists and is not a socket; sluice will not remove it`);
        }
        if (seen !== undefined && (seen.dev !== st.dev || seen.ino !== st.ino)) return; // a new file: ask again
        seen = { dev: st.dev, ino: st.ino };
      }
      await removeIfDead(this.#path);
    } finally {
      release();
    }
  }
}

let nextClient = LOCAL + 1;

let nextQueueSeq = 1;

/** The fleet queue transport over `link`: to whichever process hosts, again after a re-election. */
export function socketQueueTransport(link: SocketLink): QueueTransport {
  return {
    peer: link.peer,
    rejoins: true,
    sequence: () => nextQueueSeq++,
    send: (call, failed) => link.postQueue(call, failed),
    listen: (hear, lost) => link.listenQueue(hear, lost),
  };
}

/**
 * Reads newline-delimited JSON frames from `socket` and writes back, in one write, the frames
 * `on` returns. A malformed frame, one `on` throws on, or one longer than MAX_FRAME ends the
 * connection (what answers were already made for earlier frames are sent first), and `bad`
 * hears why.
 */
function readFrames(
  socket: net.Socket,
  on: (frame: unknown) => object | undefined,
  bad: (reason: string) => void = () => {},
): void {
  // Bytes after the last frame end, as chunks: joined only once a frame end arrives, so a peer
  // trickling a huge frame costs one copy, not one per chunk.
  let pending: string[] = [];
  let pendingLength = 0;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    if (socket.destroyed) return;
    let failure: string | undefined;
    let out = "";
    if (chunk.indexOf("\n") === -1) {
      pending.push(chunk);
      pendingLength += chunk.length;
      if (pendingLength > MAX_FRAME) failure = `more than ${MAX_FRAME} characters without a frame end`;
    } else {
      const buffer = pending.length === 0 ? chunk : pending.join("") + chunk;
      pending = [];
      pendingLength = 0;
      let from = 0;
      try {
        for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n", from)) {
          if (nl - from > MAX_FRAME) throw new Error(`a frame of ${nl - from} characters (at most ${MAX_FRAME})`);
          let frame: unknown;
          try {
            frame = JSON.parse(buffer.slice(from, nl));
          } catch {
            throw new Error("a frame that is not JSON");
          }
          const answer = on(frame);
          from = nl + 1;
          if (answer !== undefined) out += `${JSON.stringify(answer)}\n`;
        }
        if (from < buffer.length) {
          pending.push(buffer.slice(from));
          pendingLength = buffer.length - from;
          if (pendingLength > MAX_FRAME) failure = `more than ${MAX_FRAME} characters without a frame end`;
        }
      } catch (error) {
        failure = (error as Error).message;
      }
    }
    if (failure !== undefined) {
      pending = [];
      bad(failure);
      if (out !== "") socket.end(out);
      socket.destroy();
      return;
    }
    if (out !== "") socket.write(out);
  });
}

const hosts = new Set<WeakRef<SocketLink>>();
let exitHooked = false;

/** Removes `link`'s socket file when the process exits (and on SIGTERM/SIGINT nothing else handles). */
function removeOnExit(link: SocketLink): void {
  hosts.add(new WeakRef(link));
  if (exitHooked) return;
  exitHooked = true;
  const removeAll = () => {
    for (const ref of hosts) ref.deref()?.removeSocket();
  };
  process.on("exit", removeAll);
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    const onSignal = () => {
      // Another handler decides when the process exits (then "exit" removes the files); alone,
      // do what the default action would, after removing them.
      if (process.listenerCount(signal) > 1) return;
      removeAll();
      process.off(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

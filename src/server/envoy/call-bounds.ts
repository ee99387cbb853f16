/**
 * The gRPC door's bounds in time, concurrency and memory, so that no client (with or without
 * the token) can hold the service's memory or calls open past a documented figure:
 * - a deadline per call, from its arrival to its answer: a call not answered by then (a slow
 *   or never-finishing sender, a request that never half-closes) gets DEADLINE_EXCEEDED and its
 *   stream is closed. Calls are swept in arrival order, so the check costs no timer per call;
 * - most calls open at once, per connection (also announced to clients as HTTP/2's
 *   SETTINGS_MAX_CONCURRENT_STREAMS) and in total; past either, RESOURCE_EXHAUSTED at once,
 *   before any of the message is read;
 * - most request bytes held at once across every call (messages still arriving): a call whose
 *   next bytes would pass it is refused RESOURCE_EXHAUSTED and its buffers are dropped. With the
 *   per-message bound this is what keeps 1,000 slow 1 MB senders from holding 1 GB;
 * - connections: most open at once (past it a new one is closed on arrival), and a connection
 *   with no call open for the idle bound is closed (GOAWAY, then the socket): HTTP/2 PINGs or a
 *   connection that never sends its preface do not keep it. Envoy reconnects when it next calls.
 */
import type { Http2Session, ServerHttp2Stream } from "node:http2";
import type { Socket } from "node:net";

/** The bounds (`sluice serve --grpc-call-timeout`, `--grpc-max-calls`, ...). */
export interface CallBounds {
  /** Longest a call may take from arrival to answer, in ms. */
  callTimeoutMs: number;
  /** Most calls open at once over all connections. */
  maxCalls: number;
  /** Most calls open at once on one connection. */
  maxCallsPerConnection: number;
  /** Most request-message bytes held at once over all calls still arriving. */
  maxBufferedBytes: number;
  /** Longest a connection may stay open with no call open, in ms. */
  idleTimeoutMs: number;
  /** Most connections open at once. */
  maxConnections: number;
}

/** Default call deadline: the HTTP door's request timeout (server.ts). */
export const DEFAULT_CALL_TIMEOUT_MS = 15_000;
/** Default most open calls in total. */
export const DEFAULT_MAX_CALLS = 1000;
/** Default most open calls per connection (Envoy opens another connection past it). */
export const DEFAULT_MAX_CALLS_PER_CONNECTION = 100;
/** Default most request bytes held over all calls (32 default-sized messages). */
export const DEFAULT_MAX_BUFFERED_BYTES = 32 * 1024 * 1024;

/** Default idle bound of a connection: Envoy keeps its connection to a rate limit service open between calls. */
export const DEFAULT_IDLE_TIMEOUT_MS = 5 * 60_000;
/** Default most connections open at once (Envoy opens a few per worker thread). */
export const DEFAULT_MAX_CONNECTIONS = 1000;

/** The default bounds. */
export const DEFAULT_CALL_BOUNDS: CallBounds = {
  callTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
  maxCalls: DEFAULT_MAX_CALLS,
  maxCallsPerConnection: DEFAULT_MAX_CALLS_PER_CONNECTION,
  maxBufferedBytes: DEFAULT_MAX_BUFFERED_BYTES,
  idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS,
  maxConnections: DEFAULT_MAX_CONNECTIONS,
};

/** One open call. */
interface Call {
  readonly session: Http2Session | undefined;
  /** performance.now() past which it is cut. */
  readonly deadline: number;
  /** Request bytes it holds now. */
  held: number;
  /** Cuts it (answers DEADLINE_EXCEEDED if nothing was answered yet, closes the stream). */
  readonly expire: () => void;
}

/** Why a call was refused on arrival, or undefined to admit it. */
export type Admission = string | undefined;

/** Open calls, their deadlines and their buffered bytes. */
export class CallTracker {
  readonly bounds: CallBounds;
  /** In arrival order, which is deadline order (one timeout for all). */
  readonly #calls = new Map<ServerHttp2Stream, Call>();
  readonly #perSession = new Map<Http2Session, number>();
  /** Each connection with no call open, and since when (performance.now()). */
  readonly #idle = new Map<Http2Session, number>();
  /** Each connection's raw socket (node:http2 hands out only a proxy of it). */
  readonly #sockets = new WeakMap<Http2Session, Socket>();
  /** Connections whose peer sent its HTTP/2 preface. */
  readonly #greeted = new WeakSet<Http2Session>();
  #buffered = 0;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(bounds: CallBounds) {
    this.bounds = bounds;
  }

  /** Calls open now. */
  get open(): number {
    return this.#calls.size;
  }

  /** Request bytes held now. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Connections open now. */
  get connections(): number {
    return this.#perSession.size + this.#idle.size;
  }

  /**
   * Tracks a new connection (idle until its first call) and its raw `socket`; false when there
   * are already `maxConnections` (then close it).
   */
  connect(session: Http2Session, socket: Socket | undefined, now = performance.now()): boolean {
    if (this.connections >= this.bounds.maxConnections) return false;
    this.#idle.set(session, now);
    if (socket !== undefined) this.#sockets.set(session, socket);
    // The peer's SETTINGS open its preface: before them, closing the session leaves the socket.
    session.once("remoteSettings", () => this.#greeted.add(session));
    session.once("close", () => {
      this.#idle.delete(session);
      this.#perSession.delete(session);
    });
    return true;
  }

  /** Starts sweeping expired calls and idle connections (several times per bound, at most once a second). */
  start(): void {
    const shortest = Math.min(this.bounds.callTimeoutMs, this.bounds.idleTimeoutMs);
    const every = Math.max(10, Math.min(1000, Math.floor(shortest / 4)));
    this.#sweeper = setInterval(() => this.sweep(performance.now()), every);
    this.#sweeper.unref();
  }

  /** Stops sweeping (the listener closed). */
  stop(): void {
    clearInterval(this.#sweeper);
  }

  /**
   * Admits `stream` (tracked until it closes, cut by `expire` at its deadline), or says why not.
   */
  admit(stream: ServerHttp2Stream, expire: () => void): Admission {
    const { maxCalls, maxCallsPerConnection } = this.bounds;
    if (this.#calls.size >= maxCalls) return `the service has ${maxCalls} calls open, its bound (--grpc-max-calls)`;
    const session = stream.session;
    const onSession = session === undefined ? 0 : (this.#perSession.get(session) ?? 0);
    if (onSession >= maxCallsPerConnection) {
      return `this connection has ${maxCallsPerConnection} calls open, the bound per connection (--grpc-max-calls-per-connection)`;
    }
    const call: Call = { session, deadline: performance.now() + this.bounds.callTimeoutMs, held: 0, expire };
    this.#calls.set(stream, call);
    if (session !== undefined) {
      this.#perSession.set(session, onSession + 1);
      this.#idle.delete(session);
    }
    stream.once("close", () => this.#release(stream, call));
    return undefined;
  }

  /** Counts `bytes` more held by `stream`'s message; false when that would pass the bound (then refuse it). */
  hold(stream: ServerHttp2Stream, bytes: number): boolean {
    const call = this.#calls.get(stream);
    if (call === undefined) return true;
    if (this.#buffered + bytes > this.bounds.maxBufferedBytes) return false;
    call.held += bytes;
    this.#buffered += bytes;
    return true;
  }

  /** `stream`'s message is no longer held (answered from, or dropped). */
  drop(stream: ServerHttp2Stream): void {
    const call = this.#calls.get(stream);
    if (call === undefined) return;
    this.#buffered -= call.held;
    call.held = 0;
  }

  /** Cuts every call whose deadline is before `now`, and closes connections idle for the idle bound. */
  sweep(now: number): void {
    for (const [stream, call] of this.#calls) {
      if (call.deadline > now) break;
      this.#release(stream, call);
      call.expire();
    }
    // In order of becoming idle: the first still within its bound ends the sweep.
    for (const [session, since] of this.#idle) {
      if (now - since < this.bounds.idleTimeoutMs) break;
      this.#idle.delete(session);
      this.#closeIdle(session);
    }
  }

  /**
   * Closes an idle connection: GOAWAY (no call is open), and the session destroyed a second
   * later if the peer has not closed it. A peer that never sent its preface is reset at once:
   * node:http2 then leaves the socket open however its session is closed.
   */
  #closeIdle(session: Http2Session): void {
    const socket = this.#sockets.get(session);
    if (!this.#greeted.has(session) && socket !== undefined) {
      // A TCP reset where the handle allows it; a TLS socket (its handle is not a TCP one)
      // refuses a reset and is destroyed instead.
      try {
        socket.resetAndDestroy();
      } catch {
        socket.destroy();
      }
      return;
    }
    if (session.closed || session.destroyed) return;
    session.close();
    setTimeout(() => session.destroy(), 1000).unref();
  }

  #release(stream: ServerHttp2Stream, call: Call): void {
    if (this.#calls.get(stream) !== call) return;
    this.#calls.delete(stream);
    this.#buffered -= call.held;
    call.held = 0;
    const session = call.session;
    if (session === undefined) return;
    const left = (this.#perSession.get(session) ?? 1) - 1;
    if (left > 0) this.#perSession.set(session, left);
    else {
      this.#perSession.delete(session);
      // Idle from now (re-inserted: the map stays in order of becoming idle), unless it is gone.
      if (!session.closed && !session.destroyed) this.#idle.set(session, performance.now());
    }
  }
}

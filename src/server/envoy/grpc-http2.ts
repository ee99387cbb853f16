/**
 * Unary gRPC over node:http2, the part of the gRPC protocol Envoy's rate limit filter and health
 * checker use: one length-prefixed message in, one out, the status in trailers (or trailers-only
 * when refused). No compression (`grpc-accept-encoding: identity`), no streaming. It replaces
 * @grpc/grpc-js on the server, which cost 1.9-2.3 times a JSON /v1/check per check where this
 * costs about one (bench/grpc-servers.mjs measures them side by side; docs/performance.md), and
 * Envoy pays it on every request through the proxy.
 */
import {
  constants,
  createSecureServer,
  createServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { type CallBounds, CallTracker } from "./call-bounds.ts";

/** The gRPC status codes sluice answers with. */
export const GrpcStatus = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** A call's failure, answered as its status and details. */
export class GrpcError extends Error {
  override readonly name = "GrpcError";
  constructor(
    readonly code: number,
    details: string,
  ) {
    super(details);
  }
}

/** An encoded response message, its first 5 bytes left free for the gRPC message prefix. */
export interface Reply {
  buf: Buffer;
  /** Bytes of the message after the prefix. */
  length: number;
}

/** One unary method. */
export interface UnaryMethod {
  /** Refuses a call on its headers alone, before its message is read; undefined lets it in. */
  admit?(headers: IncomingHttpHeaders): GrpcError | undefined;
  /** Largest request message this method takes, when smaller than the listener's bound. */
  maxMessageBytes?: number;
  /** Answers the request message `buf[start, end)`; rejects with a GrpcError to answer a status. */
  answer(buf: Buffer, start: number, end: number): Promise<Reply>;
}

/** PEM material of `--grpc-tls-cert/-key/-ca` (a CA turns on mTLS: clients must present a cert it signed). */
export interface GrpcTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

/** Where and how to listen. */
export interface ListenOptions {
  host: string;
  port: number;
  tls: GrpcTls | undefined;
  /** Largest request message, in bytes (past it: RESOURCE_EXHAUSTED, the rest unread). */
  maxMessageBytes: number;
  /** Deadline per call, open calls per connection and in total, bytes held over all calls. */
  bounds: CallBounds;
  log: (line: string) => void;
}

/** A listening gRPC server. */
export interface RunningGrpc {
  /** The bound port (useful with port 0). */
  port: number;
  /** Graceful close: waits for calls in flight up to `timeoutMs`, then cuts connections. */
  close(timeoutMs: number): Promise<void>;
}

const PREFIX = 5;
const ignore = () => undefined;
// Shared by every call (node:http2 copies headers before use). No `date`: gRPC does not use it.
const REPLY_HEADERS = { ":status": 200, "content-type": "application/grpc", "grpc-accept-encoding": "identity" };
const REPLY_OPTIONS = { waitForTrailers: true, sendDate: false };
const FAIL_OPTIONS = { endStream: true, sendDate: false };
const OK_TRAILERS = { "grpc-status": "0" };
/** `wantTrailers` handler shared by every call (no closure per call). */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** Answers the call with a status and no message (gRPC's trailers-only response). */
function fail(stream: ServerHttp2Stream, code: number, details: string): void {
  if (stream.headersSent || stream.destroyed || stream.closed) return;
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc",
      "grpc-status": String(code),
      // Percent-encoded as the protocol asks (grpc-js decodes it with decodeURI).
      "grpc-message": encodeURI(details),
    },
    FAIL_OPTIONS,
  );
  // The request may still be arriving: stop it (RST_STREAM NO_ERROR after the status, as the
  // HTTP/2 spec allows a server that answered early), so its bytes are neither read nor buffered.
  if (!stream.readableEnded) stream.close();
}

function reply(stream: ServerHttp2Stream, { buf, length }: Reply): void {
  if (stream.headersSent || stream.destroyed || stream.closed) return; // the client gave up
  buf[0] = 0; // not compressed
  buf.writeUInt32BE(length, 1);
  stream.respond(REPLY_HEADERS, REPLY_OPTIONS);
  stream.on("wantTrailers", sendOkTrailers);
  stream.end(buf);
}

function failWith(stream: ServerHttp2Stream, error: unknown, log: ListenOptions["log"]): void {
  if (error instanceof GrpcError) fail(stream, error.code, error.message);
  else {
    log(`error answering ${stream.sentHeaders[":path"] ?? "a gRPC call"}: ${(error as Error)?.stack ?? String(error)}`);
    fail(stream, GrpcStatus.INTERNAL, "the service failed to answer; see its log");
  }
}

/** Cuts a call at its deadline: its status if nothing was answered yet, and the stream closed. */
function expire(stream: ServerHttp2Stream, timeoutMs: number): void {
  if (!stream.headersSent)
    fail(stream, GrpcStatus.DEADLINE_EXCEEDED, `the call was not complete within ${timeoutMs} ms`);
  // Still open (its response stuck behind a peer that does not read): reset it.
  if (!stream.closed && !stream.destroyed && stream.headersSent && !stream.writableEnded)
    stream.close(constants.NGHTTP2_CANCEL);
}

/** Serves one stream: routes it, reads its one message within `max` bytes, answers. */
function serveStream(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  methods: ReadonlyMap<string, UnaryMethod>,
  limit: number,
  calls: CallTracker,
  log: ListenOptions["log"],
): void {
  stream.on("error", ignore); // a reset by the client: nothing to answer
  const type = headers["content-type"];
  if (headers[":method"] !== "POST" || type === undefined || !type.startsWith("application/grpc")) {
    stream.respond({ ":status": 415 }, { endStream: true });
    if (!stream.readableEnded) stream.close();
    return;
  }
  const path = headers[":path"] ?? "";
  const method = methods.get(path);
  if (method === undefined) {
    fail(stream, GrpcStatus.UNIMPLEMENTED, `the server does not implement ${path}`);
    return;
  }
  const refused = method.admit?.(headers);
  if (refused !== undefined) {
    fail(stream, refused.code, refused.message);
    return;
  }
  const timeoutMs = calls.bounds.callTimeoutMs;
  const full = calls.admit(stream, () => expire(stream, timeoutMs));
  if (full !== undefined) {
    fail(stream, GrpcStatus.RESOURCE_EXHAUSTED, full);
    return;
  }
  const max = Math.min(limit, method.maxMessageBytes ?? limit);

  // Most requests arrive in one DATA frame: `first` alone; `more` only when they do not.
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let received = 0;
  let declared = -1; // the message's length, once its prefix is in
  let done = false; // refused while arriving: the rest is dropped
  const refuse = (code: number, details: string) => {
    done = true;
    first = more = undefined;
    calls.drop(stream);
    fail(stream, code, details);
  };
  stream.on("data", (chunk: Buffer) => {
    if (done) return;
    if (!calls.hold(stream, chunk.length)) {
      refuse(
        GrpcStatus.RESOURCE_EXHAUSTED,
        `the service holds ${calls.bounds.maxBufferedBytes} bytes of requests still arriving, its bound (--grpc-max-buffered)`,
      );
      return;
    }
    if (first === undefined) first = chunk;
    else (more ??= [first]).push(chunk);
    received += chunk.length;
    if (declared < 0 && received >= PREFIX) {
      const head = more === undefined ? first : Buffer.concat(more);
      declared = head.readUInt32BE(1);
      if (head[0] !== 0) refuse(GrpcStatus.UNIMPLEMENTED, "compressed messages are not accepted (identity only)");
      else if (declared > max)
        refuse(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${declared} vs. ${max})`);
    }
    if (!done && declared >= 0 && received > PREFIX + declared)
      refuse(GrpcStatus.UNIMPLEMENTED, "a unary method takes one request message");
  });
  stream.on("end", () => {
    if (done) return;
    if (declared < 0 || received !== PREFIX + declared) {
      fail(stream, GrpcStatus.INTERNAL, "the request ended before its message did");
      return;
    }
    const body = more === undefined ? (first as Buffer) : Buffer.concat(more, received);
    first = more = undefined;
    calls.drop(stream);
    method.answer(body, PREFIX, received).then(
      (r) => reply(stream, r),
      (error: unknown) => failWith(stream, error, log),
    );
  });
}

/** Listens for the unary `methods` (keyed by path, `/package.Service/Method`). */
export async function listenGrpc(
  methods: ReadonlyMap<string, UnaryMethod>,
  options: ListenOptions,
): Promise<RunningGrpc> {
  const tls = options.tls;
  const server =
    tls === undefined
      ? createServer()
      : createSecureServer({
          cert: tls.cert,
          key: tls.key,
          ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }),
        });
  const sessions = new Set<Http2Session>();
  const calls = new CallTracker(options.bounds);
  // Announced to clients (Envoy opens another connection rather than exceed it), and enforced
  // by the tracker for clients that ignore it.
  server.updateSettings({ maxConcurrentStreams: options.bounds.maxCallsPerConnection });
  // Sockets not yet sessions (a TLS handshake under way) count too; sessions are counted by the tracker.
  server.maxConnections = options.bounds.maxConnections;
  // node:http2 makes the session inside its own listener of the socket's arrival, which runs
  // before this one: the socket arriving here is the one of the session just made.
  let made: Http2Session | undefined;
  server.on("session", (session: Http2Session) => {
    made = session;
  });
  server.on(tls === undefined ? "connection" : "secureConnection", (socket: Socket) => {
    // TCP_NODELAY: a response leaves as headers + data + trailers, and with Nagle on its last
    // frames would wait for the client's delayed ACK (~40 ms on Linux).
    socket.setNoDelay(true);
    const session = made;
    made = undefined;
    if (session === undefined) return;
    // Under TLS the TCP socket below (node's `_parent`): a TLS socket cannot be reset.
    const tcp = tls === undefined ? socket : ((socket as Socket & { _parent?: Socket })._parent ?? socket);
    if (!calls.connect(session, tcp)) {
      tcp.destroy(); // past --grpc-max-connections
      return;
    }
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("sessionError", ignore); // a peer's protocol error ends its session, nothing more
  server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) =>
    serveStream(stream, headers, methods, options.maxMessageBytes, calls, options.log),
  );
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", (error) =>
      reject(new Error(`cannot listen for gRPC on ${options.host}:${options.port}: ${error.message}`)),
    );
    server.listen(options.port, options.host, () => resolve((server.address() as AddressInfo).port));
  });
  calls.start();
  return {
    port,
    close: (timeoutMs) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, timeoutMs);
        server.close(() => {
          clearTimeout(force);
          calls.stop();
          resolve();
        });
        // GOAWAY: no new streams; each session ends once its streams in flight are answered.
        for (const session of sessions) session.close();
      }),
  };
}

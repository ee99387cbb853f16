/**
 * The gRPC listener of `sluice serve --grpc-port`: Envoy's
 * `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health/Check`
 * (the contracts in ratelimit.proto and health.proto beside this module), on sluice's own unary
 * gRPC over node:http2 with hand-written codecs. It keeps the HTTP door's rules: the bearer token
 * (as `authorization` metadata, checked before the message is read), a bound on descriptors and
 * entries enforced while decoding, a message size bound, and optional TLS / mTLS; and the
 * bounds of call-bounds.ts (a deadline per call, open calls per connection and in total, bytes
 * held). The health service needs no token, deliberately (probes carry no credentials), but is
 * bounded like every call, and its messages (a service name) may not pass 1 KB. Closing stops
 * new calls, lets calls in flight finish, then cuts the rest.
 */
import type { IncomingHttpHeaders } from "node:http2";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { bearerMatches } from "../auth.ts";
import type { ServiceShedder } from "../shed.ts";
import type { CallBounds } from "./call-bounds.ts";
import { type EnvoyState, shouldRateLimit } from "./decide.ts";
import { GrpcError, GrpcStatus, type GrpcTls, listenGrpc, type RunningGrpc, type UnaryMethod } from "./grpc-http2.ts";
import { decodeHealthRequest, encodeHealthResponse } from "./health-codec.ts";
import { ProtoError } from "./proto-reader.ts";
import { type RequestBound, RequestRefused } from "./request-bound.ts";
import { limitHeaders } from "./response-headers.ts";
import { decodeRlsRequest, encodeRlsResponse } from "./rls-codec.ts";
import type { RlsRequest } from "./wire.ts";

export type { GrpcTls, RunningGrpc } from "./grpc-http2.ts";

/** The service name health checks may name (besides "", the whole server). */
export const RLS_SERVICE_NAME = "envoy.service.ratelimit.v3.RateLimitService";
/** The HTTP/2 path of ShouldRateLimit. */
const RLS_PATH = `/${RLS_SERVICE_NAME}/ShouldRateLimit`;
/** The HTTP/2 path of the health check. */
const HEALTH_PATH = "/grpc.health.v1.Health/Check";
const PREFIX = 5;
/** Largest health request: it holds one service name (ours is 44 bytes). */
export const HEALTH_MAX_MESSAGE_BYTES = 1024;

/** How the listener guards and answers. */
export interface GrpcOptions extends RequestBound {
  host: string;
  port: number;
  /** When set, calls to ShouldRateLimit need `authorization: Bearer <token>` metadata. */
  token: string | undefined;
  tls: GrpcTls | undefined;
  /** Largest message received, in bytes. */
  maxMessageBytes: number;
  /** Deadline per call, open calls per connection and in total, request bytes held at once. */
  bounds: CallBounds;
  /** `--envoy-response-headers`: send RateLimit-Limit/Remaining/Reset in `response_headers_to_add`. */
  responseHeaders: boolean;
  /** Whether the service can answer now (store reachable, config loaded). */
  healthy: () => Promise<boolean>;
  /** The service's load shedding (`--shed-limit`), when set: a shed call is UNAVAILABLE. */
  shed?: ServiceShedder | undefined;
  log: (line: string) => void;
}

/** The token check, on the call's headers (gRPC metadata), before anything is read. */
function tokenGuard(token: string): (headers: IncomingHttpHeaders) => GrpcError | undefined {
  return (headers) => {
    const result = bearerMatches(headers.authorization ?? "", token);
    if (result === "ok") return undefined;
    return new GrpcError(
      GrpcStatus.UNAUTHENTICATED,
      result === "missing"
        ? "this service needs `authorization: Bearer <token>` metadata"
        : "the bearer token is not valid",
    );
  };
}

/** Runs a decoder, its failures as statuses: past the bound RESOURCE_EXHAUSTED, malformed INTERNAL (as grpc-js). */
function decoding<T>(decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof RequestRefused) throw new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, error.message);
    if (error instanceof ProtoError)
      throw new GrpcError(GrpcStatus.INTERNAL, `Error deserializing request: ${error.message}`);
    throw error;
  }
}

/** The request in `buf[start, end)`, within the bound, or the status refusing it. */
function readRequest(buf: Buffer, start: number, end: number, bound: RequestBound): RlsRequest {
  const request = decoding(() => decodeRlsRequest(buf, start, end, bound));
  if (request.domain === "") throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, "rate limit domain must not be empty");
  if (request.descriptors.length === 0)
    throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, "rate limit descriptor list must not be empty");
  return request;
}

/** A store or input failure as the status Envoy sees. */
function statusOf(error: unknown): never {
  // e.g. a hits_addend past 2^53: bad input, not a server fault
  if (error instanceof ArgumentError) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, error.message);
  if (error instanceof StoreError)
    throw new GrpcError(GrpcStatus.UNAVAILABLE, `the rate-limit store failed (${error.code})`);
  throw error;
}

/** ShouldRateLimit; `getState` is read per call, so reloads apply at once. */
function rateLimitMethod(getState: () => EnvoyState, options: GrpcOptions): UnaryMethod {
  return {
    ...(options.token === undefined ? {} : { admit: tokenGuard(options.token) }),
    answer: async (buf, start, end) => {
      const shed = options.shed;
      const release = shed?.admitGrpc();
      if (shed !== undefined && release === undefined) {
        const s = shed.retryAfterSeconds;
        throw new GrpcError(
          GrpcStatus.UNAVAILABLE,
          `the service is shedding load to stay responsive; retry after ${s} second${s === 1 ? "" : "s"}`,
        );
      }
      let ok = false;
      try {
        const request = readRequest(buf, start, end, options);
        const response = await shouldRateLimit(getState(), request).catch(statusOf);
        if (options.responseHeaders) response.response_headers_to_add = limitHeaders(response.statuses);
        const reply = encodeRlsResponse(response, PREFIX);
        ok = true;
        return reply;
      } finally {
        release?.(ok);
      }
    },
  };
}

/**
 * grpc.health.v1.Health/Check: open like /healthz (Kubernetes' and Envoy's probes send no
 * credentials), deliberately; bounded like every call, and to a 1 KB message.
 */
function healthMethod(healthy: () => Promise<boolean>): UnaryMethod {
  return {
    maxMessageBytes: HEALTH_MAX_MESSAGE_BYTES,
    answer: async (buf, start, end) => {
      const name = decoding(() => decodeHealthRequest(buf, start, end));
      if (name !== "" && name !== RLS_SERVICE_NAME)
        throw new GrpcError(GrpcStatus.NOT_FOUND, `unknown service ${JSON.stringify(name)}`);
      const ok = await healthy().catch(() => false);
      return encodeHealthResponse(ok ? "SERVING" : "NOT_SERVING", PREFIX);
    },
  };
}

/** Starts the RateLimitService and the health service on `host:port`. */
export function startGrpcServer(getState: () => EnvoyState, options: GrpcOptions): Promise<RunningGrpc> {
  const methods = new Map<string, UnaryMethod>([
    [RLS_PATH, rateLimitMethod(getState, options)],
    [HEALTH_PATH, healthMethod(options.healthy)],
  ]);
  return listenGrpc(methods, options);
}

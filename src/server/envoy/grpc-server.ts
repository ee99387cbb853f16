/**
 * The gRPC listener of `sluice serve --grpc-port`: Envoy's
 * `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health/Check`
 * on @grpc/grpc-js, loaded from our .proto files. It keeps the HTTP door's rules: the bearer token
 * (as `authorization` metadata), a bound on descriptors and entries checked before decoding, a
 * message size bound, and optional TLS / mTLS. Closing stops new calls, lets calls in flight
 * finish, then cuts the rest.
 */
import { type AddressInfo, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { bearerMatches } from "../auth.ts";
import { type EnvoyState, shouldRateLimit } from "./decide.ts";
import { type RequestBound, refuseRequest } from "./request-bound.ts";
import { limitHeaders } from "./response-headers.ts";
import { PROTO_OPTIONS, type RlsRequest, type RlsResponse } from "./wire.ts";

/** Where ratelimit.proto is, beside this module (src/ in tests, dist/ when built). */
export const PROTO_PATH = fileURLToPath(new URL("./ratelimit.proto", import.meta.url));
/** Where health.proto (grpc.health.v1) is. */
export const HEALTH_PROTO_PATH = fileURLToPath(new URL("./health.proto", import.meta.url));

/** The RateLimitService definition (for servers and clients). */
export function rateLimitServiceDefinition(): grpc.ServiceDefinition {
  const pkg = grpc.loadPackageDefinition(loadSync(PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  return pkg.envoy.service.ratelimit.v3.RateLimitService.service;
}

/** The grpc.health.v1.Health definition (for servers and clients). */
export function healthServiceDefinition(): grpc.ServiceDefinition {
  const pkg = grpc.loadPackageDefinition(loadSync(HEALTH_PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  return pkg.grpc.health.v1.Health.service;
}

/** The service name health checks may name (besides "", the whole server). */
export const RLS_SERVICE_NAME = "envoy.service.ratelimit.v3.RateLimitService";

/** PEM material of `--grpc-tls-cert/-key/-ca` (a CA turns on mTLS: clients must present a cert it signed). */
export interface GrpcTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

/** How the listener guards and answers. */
export interface GrpcOptions extends RequestBound {
  host: string;
  port: number;
  /** When set, calls to ShouldRateLimit need `authorization: Bearer <token>` metadata. */
  token: string | undefined;
  tls: GrpcTls | undefined;
  /** Largest message received, in bytes. */
  maxMessageBytes: number;
  /** `--envoy-response-headers`: send RateLimit-Limit/Remaining/Reset in `response_headers_to_add`. */
  responseHeaders: boolean;
  /** Whether the service can answer now (store reachable, config loaded). */
  healthy: () => Promise<boolean>;
  log: (line: string) => void;
}

/** A listening gRPC server. */
export interface RunningGrpc {
  /** The bound port (useful with port 0). */
  port: number;
  /** Graceful close: waits for calls in flight up to `timeoutMs`, then cuts connections. */
  close(timeoutMs: number): Promise<void>;
}

/** What the bounded deserializer hands over instead of a request it would not decode. */
interface Refused {
  refused: string;
}

/** `definition` with ShouldRateLimit's decoder behind the request bound. */
function boundedDefinition(bound: RequestBound): grpc.ServiceDefinition {
  const definition = rateLimitServiceDefinition();
  const method = definition.ShouldRateLimit as grpc.MethodDefinition<RlsRequest, RlsResponse>;
  const decode = method.requestDeserialize;
  return {
    ...definition,
    ShouldRateLimit: {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        const refused = refuseRequest(bytes, bound);
        return (refused === undefined ? decode(bytes) : ({ refused } satisfies Refused)) as RlsRequest;
      },
    },
  };
}

/** Starts the RateLimitService on `host:port`; `getState` is read per call, so reloads apply at once. */
export async function startGrpcServer(getState: () => EnvoyState, options: GrpcOptions): Promise<RunningGrpc> {
  const { token, log } = options;
  const server = new grpc.Server({
    // No channelz: nothing reads it here, and its per-call bookkeeping costs CPU on every check.
    "grpc.enable_channelz": 0,
    "grpc.max_receive_message_length": options.maxMessageBytes,
  });
  server.addService(boundedDefinition(options), {
    ShouldRateLimit: (
      call: grpc.ServerUnaryCall<RlsRequest, RlsResponse>,
      callback: grpc.sendUnaryData<RlsResponse>,
    ) => {
      if (token !== undefined) {
        const value = call.metadata.get("authorization")[0];
        const result = bearerMatches(typeof value === "string" ? value : "", token);
        if (result !== "ok") {
          callback({
            code: grpc.status.UNAUTHENTICATED,
            details:
              result === "missing"
                ? "this service needs `authorization: Bearer <token>` metadata"
                : "the bearer token is not valid",
          });
          return;
        }
      }
      const request = call.request;
      const refused = (request as unknown as Partial<Refused>).refused;
      if (refused !== undefined) {
        callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: refused });
        return;
      }
      if (request.domain === "") {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: "rate limit domain must not be empty" });
        return;
      }
      if (request.descriptors.length === 0) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: "rate limit descriptor list must not be empty" });
        return;
      }
      shouldRateLimit(getState(), request).then(
        (response) => {
          if (options.responseHeaders) response.response_headers_to_add = limitHeaders(response.statuses);
          callback(null, response);
        },
        (error: unknown) => {
          if (error instanceof ArgumentError) {
            // e.g. a hits_addend past 2^53: bad input, not a server fault
            callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
            return;
          }
          if (error instanceof StoreError) {
            callback({ code: grpc.status.UNAVAILABLE, details: `the rate-limit store failed (${error.code})` });
            return;
          }
          log(`error answering ShouldRateLimit: ${(error as Error)?.stack ?? String(error)}`);
          callback({ code: grpc.status.INTERNAL, details: "the service failed to answer; see its log" });
        },
      );
    },
  });
  // Open like /healthz: Kubernetes' grpc probe and Envoy's health checker send no credentials.
  server.addService(healthServiceDefinition(), {
    Check: (
      call: grpc.ServerUnaryCall<{ service: string }, { status: string }>,
      callback: grpc.sendUnaryData<{ status: string }>,
    ) => {
      const name = call.request.service;
      if (name !== "" && name !== RLS_SERVICE_NAME) {
        callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(name)}` });
        return;
      }
      options.healthy().then(
        (ok) => callback(null, { status: ok ? "SERVING" : "NOT_SERVING" }),
        () => callback(null, { status: "NOT_SERVING" }),
      );
    },
  });
  const tls = options.tls;
  const credentials =
    tls === undefined
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(
          tls.ca ?? null,
          [{ private_key: tls.key, cert_chain: tls.cert }],
          tls.ca !== undefined,
        );
  // Our own listener, with TCP_NODELAY: grpc-js leaves Nagle on for accepted sockets, and a
  // response written as headers + data + trailers then waits for the client's delayed ACK
  // (~40 ms on Linux) before its last frames leave. With TLS the injected socket is wrapped by
  // grpc-js's secure HTTP/2 server, which does the handshake.
  const injector = server.createConnectionInjector(credentials);
  const listener = createServer({ noDelay: true }, (socket) => injector.injectConnection(socket));
  const bound = await new Promise<number>((resolve, reject) => {
    listener.once("error", (error) =>
      reject(new Error(`cannot listen for gRPC on ${options.host}:${options.port}: ${error.message}`)),
    );
    listener.listen(options.port, options.host, () => resolve((listener.address() as AddressInfo).port));
  });
  return {
    port: bound,
    close: (timeoutMs) =>
      new Promise<void>((resolve) => {
        listener.close();
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, timeoutMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}

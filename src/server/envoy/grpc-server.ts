/**
 * The gRPC listener of `sluice serve --grpc-port`: Envoy's
 * `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` on @grpc/grpc-js, loaded from
 * our ratelimit.proto. Closing stops new calls, lets calls in flight finish, then cuts the rest.
 */
import { type AddressInfo, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ArgumentError, StoreError } from "../../errors.ts";
import { type EnvoyState, shouldRateLimit } from "./decide.ts";
import { PROTO_OPTIONS, type RlsRequest, type RlsResponse } from "./wire.ts";

/** Where ratelimit.proto is, beside this module (src/ in tests, dist/ when built). */
export const PROTO_PATH = fileURLToPath(new URL("./ratelimit.proto", import.meta.url));

/** The RateLimitService definition (for servers and clients). */
export function rateLimitServiceDefinition(): grpc.ServiceDefinition {
  const pkg = grpc.loadPackageDefinition(loadSync(PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  return pkg.envoy.service.ratelimit.v3.RateLimitService.service;
}

/** A listening gRPC server. */
export interface RunningGrpc {
  /** The bound port (useful with port 0). */
  port: number;
  /** Graceful close: waits for calls in flight up to `timeoutMs`, then cuts connections. */
  close(timeoutMs: number): Promise<void>;
}

/** Starts the RateLimitService on `host:port`; `getState` is read per call, so reloads apply at once. */
export async function startGrpcServer(
  host: string,
  port: number,
  getState: () => EnvoyState,
  log: (line: string) => void,
): Promise<RunningGrpc> {
  // No channelz: nothing reads it here, and its per-call bookkeeping costs CPU on every check.
  const server = new grpc.Server({ "grpc.enable_channelz": 0 });
  server.addService(rateLimitServiceDefinition(), {
    ShouldRateLimit: (
      call: grpc.ServerUnaryCall<RlsRequest, RlsResponse>,
      callback: grpc.sendUnaryData<RlsResponse>,
    ) => {
      const request = call.request;
      if (request.domain === "") {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: "rate limit domain must not be empty" });
        return;
      }
      if (request.descriptors.length === 0) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: "rate limit descriptor list must not be empty" });
        return;
      }
      shouldRateLimit(getState(), request).then(
        (response) => callback(null, response),
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
  // Our own listener, with TCP_NODELAY: grpc-js leaves Nagle on for accepted sockets, and a
  // response written as headers + data + trailers then waits for the client's delayed ACK
  // (~40 ms on Linux) before its last frames leave.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const listener = createServer({ noDelay: true }, (socket) => injector.injectConnection(socket));
  const bound = await new Promise<number>((resolve, reject) => {
    listener.once("error", (error) => reject(new Error(`cannot listen for gRPC on ${host}:${port}: ${error.message}`)));
    listener.listen(port, host, () => resolve((listener.address() as AddressInfo).port));
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

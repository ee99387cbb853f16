// Load helpers for bench/serve.mjs and bench/grpc-servers.mjs: a fixed number of ShouldRateLimit
// calls (a fixed number in flight on one HTTP/2 channel, as Envoy keeps them) or JSON checks,
// and the server's own CPU time (its process.cpuUsage(), over IPC), so "cost per check" is the
// service's work alone, whatever the load generator spends.
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

const PROTO_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

/** A RateLimitService client for `address` (host:port), using the built proto. */
export function rlsClient(address, protoPath) {
  const pkg = grpc.loadPackageDefinition(loadSync(protoPath, PROTO_OPTIONS));
  const Client = pkg.envoy.service.ratelimit.v3.RateLimitService;
  return new Client(address, grpc.credentials.createInsecure());
}

/**
 * The server's own CPU time in µs (user + system), asked over IPC: the server process answers
 * "cpu" with its process.cpuUsage() (bench/cpu-probe.mjs, or the bench's own server).
 */
export function serverCpuUs(child) {
  return new Promise((resolve) => {
    child.once("message", (u) => resolve(u.user + u.system));
    child.send("cpu");
  });
}

/** Sends `total` ShouldRateLimit calls, `inFlight` at a time; throws if any failed or was not OK. */
export async function grpcCalls(client, request, inFlight, total) {
  let sent = 0;
  let errors = 0;
  const call = () =>
    new Promise((resolve) => {
      client.ShouldRateLimit(request, (err, res) => {
        if (err !== null || res.overall_code !== "OK") errors++;
        resolve();
      });
    });
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (sent < total) {
        sent++;
        await call();
      }
    }),
  );
  if (errors > 0) throw new Error(`${errors} gRPC calls failed or were not OK`);
}

/** Sends `total` POSTs of `body` to `url`/v1/check over `connections` kept-alive connections. */
export async function jsonCalls(url, body, connections, total) {
  const { default: autocannon } = await import("autocannon");
  const r = await autocannon({
    url: `${url}/v1/check`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections,
    amount: total,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
}

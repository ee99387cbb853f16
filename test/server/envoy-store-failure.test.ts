import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { type RlsClient, rlsClient } from "./envoy-client.ts";

// A Redis that refuses every connection (port 1 on loopback): the store fails on each check.
const start = (onError: "deny" | "throw") =>
  startServer({
    envoyConfig: join(import.meta.dirname, "envoy-fixtures"),
    grpcPort: 0,
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 65536,
    maxBatch: 100,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
    redis: "redis://127.0.0.1:1",
    timeoutMs: 200,
    onError,
  });

let deny: RunningServer;
let raise: RunningServer;
let denyClient: RlsClient;
let raiseClient: RlsClient;
beforeAll(async () => {
  [deny, raise] = await Promise.all([start("deny"), start("throw")]);
  denyClient = rlsClient(`127.0.0.1:${deny.context.envoy?.grpc.port}`);
  raiseClient = rlsClient(`127.0.0.1:${raise.context.envoy?.grpc.port}`);
}, 20_000);
afterAll(async () => {
  denyClient?.close();
  raiseClient?.close();
  await Promise.all([deny?.close(), raise?.close()]);
});

describe("ShouldRateLimit when the store fails", () => {
  it("grpc.health.v1 answers NOT_SERVING while the store is down", async () => {
    expect(await denyClient.health()).toBe("NOT_SERVING");
    expect(await raiseClient.health("envoy.service.ratelimit.v3.RateLimitService")).toBe("NOT_SERVING");
  });

  it("--on-store-error deny answers OVER_LIMIT; throw answers UNAVAILABLE (Envoy's failure_mode_deny decides)", async () => {
    const request = [{ entries: [["remote_address", "1.2.3.4"]] as Array<[string, string]> }];
    expect((await denyClient.ask("edge", request)).overall_code).toBe("OVER_LIMIT");
    await expect(raiseClient.ask("edge", request)).rejects.toMatchObject({ code: 14 });
    // Nothing to count, nothing to fail: unlimited and unmatched descriptors still answer OK.
    expect((await raiseClient.ask("edge", [{ entries: [["ldap", "x"]] }])).overall_code).toBe("OK");
  });
});

/** Envoy parity on the HTTP side: /healthcheck, the Envoy config in /v1/rules and /v1/status. */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";

let running: RunningServer;
beforeAll(async () => {
  running = await startServer({
    envoyConfig: join(import.meta.dirname, "envoy-fixtures"),
    grpcPort: 0,
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 65536,
    maxBatch: 100,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
  });
});
afterAll(() => running?.close());

describe("Envoy parity over HTTP", () => {
  it("/healthcheck answers as /healthz (envoyproxy/ratelimit's path)", async () => {
    const [a, b] = await Promise.all([fetch(`${running.url}/healthcheck`), fetch(`${running.url}/healthz`)]);
    expect(a.status).toBe(200);
    const [ja, jb] = await Promise.all([a.json(), b.json()]);
    expect(ja).toEqual(jb);
    expect(ja).toMatchObject({ status: "ok" });
  });

  it("/v1/rules and /v1/status list the Envoy domains and their limited descriptors", async () => {
    const rules = (await (await fetch(`${running.url}/v1/rules`)).json()) as {
      rules: unknown[];
      envoy: { domains: Array<{ domain: string; descriptors: Array<Record<string, unknown>> }> };
    };
    expect(rules.envoy.domains.map((d) => d.domain)).toEqual(["edge", "messaging"]);
    const messaging = rules.envoy.domains.find((d) => d.domain === "messaging");
    expect(messaging?.descriptors).toContainEqual({
      path: [{ key: "message_type", value: "marketing" }, { key: "to_number" }],
      limit: "5 per day",
      name: null,
      shadowMode: false,
      summary: expect.any(String),
    });
    const edge = rules.envoy.domains.find((d) => d.domain === "edge");
    expect(edge?.descriptors.some((d) => d.limit === "unlimited")).toBe(true);
    expect(edge?.descriptors.some((d) => d.shadowMode === true)).toBe(true);
    const status = (await (await fetch(`${running.url}/v1/status`)).json()) as { envoy: unknown };
    expect(status.envoy).toEqual(rules.envoy);
  });
});

// The JSON behind the status page: open health (with the last reload), and per-rule series and
// most limited keys behind the token. The page itself: status-page.test.ts (Chromium).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
let s: RunningServer;
const auth = { authorization: "Bearer t0ken" };

beforeAll(async () => {
  s = await startServer({
    config: tmp.file("rules.yaml", "rules:\n  two: { algorithm: fixed-window, limit: 2, windowMs: 1h }\n"),
    port: 0,
    host: "127.0.0.1",
    token: "t0ken",
    maxBodyBytes: 65536,
    maxBatch: 1000,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
  });
});
afterAll(async () => {
  await s?.close();
  tmp.cleanup();
});

describe("status JSON", () => {
  it("/healthz is open and says when the rules were loaded", async () => {
    const health = (await (await fetch(`${s.url}/healthz`)).json()) as { config: { lastReloadAt: string } };
    expect(Date.parse(health.config.lastReloadAt)).toBeGreaterThan(Date.parse("2020-01-01"));
  });

  it("/v1/status needs the token and carries 300 s of series and the most denied keys", async () => {
    expect((await fetch(`${s.url}/v1/status`)).status).toBe(401);
    const batch = [
      ...Array.from({ length: 7 }, () => ({ rule: "two", key: "hammer" })),
      ...Array.from({ length: 3 }, () => ({ rule: "two", key: "tap" })),
    ];
    await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(batch),
    });
    const status = (await (await fetch(`${s.url}/v1/status`, { headers: auth })).json()) as {
      rules: Array<{ series: { start: number; allowed: number[]; denied: number[] }; topDenied: unknown[] }>;
    };
    const rule = status.rules[0];
    expect(rule?.series.allowed).toHaveLength(300);
    const sum = (xs: number[] | undefined) => (xs ?? []).reduce((a, b) => a + b, 0);
    expect([sum(rule?.series.allowed), sum(rule?.series.denied)]).toEqual([4, 6]);
    expect(rule?.topDenied).toEqual([
      { key: "hammer", count: 5 },
      { key: "tap", count: 1 },
    ]);
  });
});

// The JSON behind the status page: open health (with the last reload), and per rule tier the
// series, totals and most limited keys (as rates) behind the token; the page's icon. The page
// itself: status-page.test.ts (Chromium).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
let s: RunningServer;
const auth = { authorization: "Bearer t0ken" };

beforeAll(async () => {
  s = await startServer({
    config: tmp.file(
      "rules.yaml",
      "rules:\n  two:\n    spec: { algorithm: fixed-window, limit: 2, windowMs: 1h }\n    tiers:\n      pro: { algorithm: fixed-window, limit: 5, windowMs: 1h }\n",
    ),
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

  it("/v1/status needs the token and carries, per tier, 300 s of series, totals and the most denied keys", async () => {
    expect((await fetch(`${s.url}/v1/status`)).status).toBe(401);
    const batch = [
      ...Array.from({ length: 7 }, () => ({ rule: "two", key: "hammer" })),
      ...Array.from({ length: 3 }, () => ({ rule: "two", key: "tap" })),
      ...Array.from({ length: 8 }, () => ({ rule: "two", key: "hammer", tier: "pro" })),
    ];
    await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(batch),
    });
    interface View {
      tier: string | null;
      summary: string;
      totals: { allowed: number; denied: number; failure: number };
      series: { start: number; allowed: number[]; denied: number[]; failed: number[] };
      topDenied: Array<{ key: string; perMinute: number }>;
      keys: number | null;
      keysSummarised: boolean;
    }
    const status = (await (await fetch(`${s.url}/v1/status`, { headers: auth })).json()) as {
      rules: Array<{ allowed: number; denied: number; failure: number; byTier: View[] }>;
    };
    const rule = status.rules[0];
    // The rule's totals (the /metrics counters) add its tiers up; each tier has its own view.
    expect([rule?.allowed, rule?.denied, rule?.failure]).toEqual([9, 9, 0]);
    expect(rule?.byTier.map((v) => [v.tier, v.summary])).toEqual([
      [null, "at most 2 per clock-aligned hour (up to 4 across a window boundary)"],
      ["pro", "at most 5 per clock-aligned hour (up to 10 across a window boundary)"],
    ]);
    const [base, pro] = (rule?.byTier ?? []) as [View, View];
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(base.series.allowed).toHaveLength(300);
    expect([sum(base.series.allowed), sum(base.series.denied), sum(base.series.failed)]).toEqual([4, 6, 0]);
    expect([sum(pro.series.allowed), sum(pro.series.denied)]).toEqual([5, 3]);
    expect(base.totals).toEqual({ allowed: 4, denied: 6, failure: 0 });
    expect(pro.totals).toEqual({ allowed: 5, denied: 3, failure: 0 });
    // Denials as a rate per minute, never a bare count: just begun, over the shortest span, 5 s
    // weighted by the 30 s half-life (30 s / ln 2 · (1 − 2^(−5/30)) ≈ 4.72 s).
    const span = (30 / Math.LN2) * (1 - 2 ** (-5 / 30));
    expect(base.topDenied.map((d) => d.key)).toEqual(["hammer", "tap"]);
    expect(base.topDenied[0]?.perMinute).toBeCloseTo((5 * 60) / span, 0);
    expect(pro.topDenied).toEqual([{ key: "hammer", perMinute: expect.closeTo((3 * 60) / span, 0) }]);
    // The keys the store holds per tier: hammer and tap on the rule's own spec, hammer on pro.
    expect([base.keys, base.keysSummarised, pro.keys, pro.keysSummarised]).toEqual([2, false, 1, false]);
    await fetch(`${s.url}/v1/reset`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ rule: "two", key: "tap" }),
    });
    const after = (await (await fetch(`${s.url}/v1/status`, { headers: auth })).json()) as typeof status;
    expect(after.rules[0]?.byTier.map((v) => v.keys)).toEqual([1, 1]);
  });

  it("on Redis, a tier's key count is null: not known (counting would scan the keyspace)", async () => {
    const redis = await startServer({
      config: tmp.file("redis-rules.yaml", "rules:\n  one:\n    spec: { algorithm: gcra, limit: 5, periodMs: 1s }\n"),
      port: 0,
      host: "127.0.0.1",
      redis: "redis://127.0.0.1:6379",
      prefix: `sluice-test:status-keys:${process.pid}:`,
      connectTimeoutMs: 1000,
      maxBodyBytes: 65536,
      maxBatch: 1000,
      watch: false,
      shutdownTimeoutMs: 1000,
      log: () => undefined,
    });
    try {
      await fetch(`${redis.url}/v1/check`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ rule: "one", key: "k" }),
      });
      const status = (await (await fetch(`${redis.url}/v1/status`)).json()) as {
        rules: Array<{ byTier: Array<{ keys: number | null; keysSummarised: boolean }> }>;
      };
      expect(status.rules[0]?.byTier).toMatchObject([{ keys: null, keysSummarised: false }]);
    } finally {
      await redis.close();
    }
  });

  it("/favicon.ico answers an icon without the token", async () => {
    const res = await fetch(`${s.url}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toMatch(/^<svg /);
  });
});

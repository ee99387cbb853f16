// The adaptive factor on real Redis: two throttles of one name on a RedisStore (two processes'
// worth of state) share it: one's 429 cuts it, the other reads the cut, through its store alone.
import { Redis } from "ioredis";
import { createThrottle, systemClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix } from "../../test/support/redis-server.ts";
import { AdaptiveRate } from "./adaptive-rate-store.ts";

const redis = await standaloneRedis("adaptive rate on Redis");

describe.skipIf(redis === undefined)("the adaptive factor on Redis", () => {
  it("is the fleet's: a cut by one throttle is read by another; it never leaves [floor, 1]", async () => {
    const prefix = uniquePrefix("adaptive");
    const clients = [new Redis(redis?.url ?? ""), new Redis(redis?.url ?? "")];
    const stores = clients.map((client) => new RedisStore({ client, prefix, timeoutMs: 10_000 }));
    const params = { cut: 0.5, recoverPerSecond: 0.01, floor: 0.2, refreshMs: 60_000 };
    const [a, b] = stores.map((store) => new AdaptiveRate(store, "fleet", systemClock, params, 100)) as [
      AdaptiveRate,
      AdaptiveRate,
    ];
    try {
      await b.refresh("k");
      expect(b.factor("k")).toBe(1);
      await a.cut("k", 1);
      expect(b.factor("k")).toBe(1); // b has not read since (refreshMs is a minute)
      await b.refresh("k");
      // 0.5, plus what 10 ms a second recovers while this runs (far less than 0.05).
      expect(b.factor("k")).toBeGreaterThanOrEqual(0.5);
      expect(b.factor("k")).toBeLessThan(0.55);
      for (let i = 0; i < 4; i++) {
        await new Promise((resolve) => setTimeout(resolve, 2));
        await b.cut("k", 1);
      }
      await a.refresh("k");
      expect(a.factor("k")).toBeGreaterThanOrEqual(0.2);
      expect(a.factor("k")).toBeLessThan(0.25);
    } finally {
      a.close();
      b.close();
      for (const s of stores) await s.close();
      for (const c of clients) c.disconnect();
    }
  });

  it("a throttle's 429 cuts the fleet's factor once; another's 429 within that pause does not cut again", async () => {
    const prefix = uniquePrefix("adaptive-throttle");
    const clients = [new Redis(redis?.url ?? ""), new Redis(redis?.url ?? ""), new Redis(redis?.url ?? "")];
    const stores = clients.map((client) => new RedisStore({ client, prefix, timeoutMs: 10_000 }));
    const params = { cut: 0.5, recoverPerSecond: 0.01, floor: 0.1, refreshMs: 60_000 };
    const rate = { algorithm: "gcra", limit: 100, periodMs: 1000, burst: 100 } as const;
    const [a, b] = stores.slice(0, 2).map((store) => createThrottle({ name: "fleet", store, rate, adaptive: params }));
    const reader = new AdaptiveRate(stores[2] as RedisStore, "fleet", systemClock, params, 100);
    const tooMany = { status: 429, headers: { "retry-after": "5" } };
    try {
      await a?.observe("k", tooMany);
      await b?.observe("k", tooMany);
      await reader.refresh("k");
      expect(reader.factor("k")).toBeGreaterThanOrEqual(0.5);
      expect(reader.factor("k")).toBeLessThan(0.51);
    } finally {
      await Promise.all([a?.close(), b?.close()]);
      reader.close();
      for (const s of stores) await s.close();
      for (const c of clients) c.disconnect();
    }
  });
});

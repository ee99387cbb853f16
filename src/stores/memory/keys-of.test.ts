// MemoryStore.keysOf: the keys held per rule identity (the status page's per-tier counts), at a
// fixed instant: exact records in the Map and compact tiers, a lower bound once some are summarised.
import { createLimiter, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 1);

describe("MemoryStore.keysOf", () => {
  it("counts per service rule tier, across the Map and compact tiers; resets and expiry take keys away", () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store }).addRule(
      "api",
      { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      { tiers: { pro: { algorithm: "gcra", limit: 10, periodMs: 1000 } } },
    );
    for (const key of ["a", "b", "c"]) service.check("api", key);
    service.check("api", "a", { tier: "pro" });
    expect(store.keysOf("rule:api")).toEqual({ keys: 3, summarised: false });
    expect(store.keysOf("rule:api:tier:pro")).toEqual({ keys: 1, summarised: false });
    expect(store.keysOf("rule:other")).toEqual({ keys: 0, summarised: false });
    service.reset("api", "b");
    expect(store.keysOf("rule:api").keys).toBe(2);
  });

  it("under maxKeys: keys pushed to the compact tier still count; summarised ones make it a lower bound", () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ maxKeys: 10, maxBytes: 65536, seed: 1 });
    const limiter = createLimiter(
      { algorithm: "token-bucket", capacity: 5, refillPerSecond: 1 },
      { clock, store, name: "n" },
    );
    for (let i = 0; i < 100; i++) limiter.tryAcquire(`k${i}`);
    const stats = store.stats();
    expect(store.keysOf("name:n")).toEqual({ keys: stats.keys + stats.compactKeys, summarised: stats.summarised > 0 });
    expect(store.keysOf("name:n").keys).toBe(100 - Math.max(stats.summarised, 0));
  });
});

import { createThrottle, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { rollingLagMs, startSafeRate } from "./start-safe-rate.ts";

describe("startSafeRate: a shared store's rolling rules widened by the late-start tolerance", () => {
  it("widens a log's window and takes a bucket's burst down by what 20 ms refills, floor 1", () => {
    expect(
      startSafeRate([
        { algorithm: "sliding-log", limit: 50, windowMs: 1000 },
        { algorithm: "sliding-window", limit: 5, windowMs: 100 },
        { algorithm: "gcra", limit: 100, periodMs: 1000, burst: 5 },
        { algorithm: "gcra", limit: 5, periodMs: 1000 },
        { algorithm: "gcra", limit: 200, periodMs: 1000, burst: 1 },
        { algorithm: "token-bucket", capacity: 2000, refillPerSecond: 100 },
        { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
        { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 5 },
      ]),
    ).toEqual([
      { algorithm: "sliding-log", limit: 50, windowMs: 1020 },
      { algorithm: "sliding-window", limit: 5, windowMs: 120 },
      { algorithm: "gcra", limit: 100, periodMs: 1000, burst: 3 },
      { algorithm: "gcra", limit: 5, periodMs: 1000, burst: 4 },
      { algorithm: "gcra", limit: 200, periodMs: 1000, burst: 1 },
      { algorithm: "token-bucket", capacity: 1998, refillPerSecond: 100 },
      { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
      { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 5 },
    ]);
  });

  it("a start may come as late as the tightest rolling member covers, never under 20 ms", () => {
    expect(rollingLagMs([{ algorithm: "sliding-log", limit: 50, windowMs: 1000 }])).toBe(20);
    // 1 unit held back at 5 a second: 200 ms of lag covered.
    expect(rollingLagMs([{ algorithm: "gcra", limit: 5, periodMs: 1000, burst: 5 }])).toBe(200);
    expect(rollingLagMs([{ algorithm: "gcra", limit: 100, periodMs: 1000, burst: 5 }])).toBe(20);
    // Burst 1: nothing held back, 20 ms anyway (docs/throttle.md: not covered).
    expect(rollingLagMs([{ algorithm: "gcra", limit: 200, periodMs: 1000, burst: 1 }])).toBe(20);
    expect(
      rollingLagMs([
        { algorithm: "fixed-window", limit: 100, windowMs: 1000 },
        { algorithm: "gcra", limit: 5, periodMs: 1000 },
        { algorithm: "sliding-log", limit: 20, windowMs: 250 },
      ]),
    ).toBe(20);
    expect(rollingLagMs([{ algorithm: "fixed-window", limit: 100, windowMs: 1000 }])).toBeUndefined();
  });
});

describe("createThrottle: which stores get the start-safe rate", () => {
  // A bucket of 10 whose 10 units refill in a second: on a shared store its burst is 9 (20 ms
  // refills 0.2 of a unit, rounded up), so a job of cost 10 can never pass there; a MemoryStore,
  // the throttle's own or one passed in, is this process's: the rule as given.
  const rate = { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 } as const;

  it("a MemoryStore passed in keeps the rule as given: a job of the whole capacity runs", async () => {
    for (const store of [undefined, new MemoryStore()]) {
      const throttle = createThrottle({ rate, ...(store === undefined ? {} : { store }) });
      await expect(throttle.schedule(async () => "ran", { cost: 10 })).resolves.toBe("ran");
      await throttle.close();
    }
  });

  it("a shared store (SharedMemoryStore) widens it, and the refusal names the margin", async () => {
    const store = new SharedMemoryStore({ maxKeys: 100 });
    const throttle = createThrottle({ rate, store });
    await expect(throttle.schedule(async () => "ran", { cost: 10 })).rejects.toThrow(/start-safety margin/);
    await expect(throttle.schedule(async () => "ran", { cost: 9 })).resolves.toBe("ran");
    await throttle.close();
  });
});

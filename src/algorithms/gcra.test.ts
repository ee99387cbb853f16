// gcra and leaky-bucket against docs/semantics.md §5: T = periodMs / limit (or 1000 / leakPerSecond),
// τ = burst·T (or capacity·T); start = max(tat, now), next = start + cost·T; allowed iff
// next − now ≤ τ; remaining = floor((τ − (tat − now)) / T) after the decision;
// retryAfterMs = ceil(next − τ − now); resetMs = ceil(tat − now); delayMs = ceil(start − now).
import { createLimiter, type Decision, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { gcra } from "./gcra.ts";
import { checkRetryHonest, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;

describe("gcra", () => {
  it("T = 200, τ = 1000: bursts, weighted cost, edges, cost > burst, clock stepping back", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "gcra", limit: 5, periodMs: 1000 }, clock);
    runTable(limiter, clock, 5, [
      [0, "a", 1, true, 4, 0, 200], // tat 200
      [0, "a", 4, true, 0, 0, 1000], // next 1000 − 0 ≤ 1000
      [0, "a", 1, false, 0, 200, 1000], // ceil(1200 − 1000 − 0)
      [199, "a", 1, false, 0, 1, 801],
      [200, "a", 1, true, 0, 0, 1000], // tat 1200
      [700, "a", 3, false, 2, 100, 500], // backlog 500: floor((1000 − 500)/200) = 2
      [700, "a", 6, false, 2, INF, 500], // cost > burst
      [700, "a", 2, true, 0, 0, 900], // tat 1600
      [5000, "a", 1, true, 4, 0, 200], // long idle: as a fresh key, tat 5200
      // The clock steps back to 4000: backlog 1200 > τ; no refill, remaining 0 (not negative).
      [4000, "a", 1, false, 0, 400, 1200],
      [4400, "a", 1, true, 0, 0, 1000],
    ]);
  });

  it("burst differs from limit: 4 at once, then one per 500 ms", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "gcra", limit: 2, periodMs: 1000, burst: 4 }, clock);
    runTable(limiter, clock, 4, [
      [0, "k", 1, true, 3, 0, 500],
      [0, "k", 1, true, 2, 0, 1000],
      [0, "k", 2, true, 0, 0, 2000],
      [0, "k", 1, false, 0, 500, 2000],
      [500, "k", 1, true, 0, 0, 2000],
    ]);
    clock.set(600); // tat 2500: cost 2 needs backlog ≤ 1000, at 1500
    expect(limiter.peek("k", 2).retryAfterMs).toBe(900);
    checkRetryHonest(limiter, clock, "k", 2);
    checkRetryHonest(limiter, clock, "k", 4);
  });

  it("an inexact quotient (T = 333.3…) stays within 1 ms and never early", () => {
    for (const t0 of [0, 1_760_000_000_000]) {
      const clock = new ManualClock(t0);
      const limiter = createLimiter({ algorithm: "gcra", limit: 3, periodMs: 1000 }, clock);
      runTable(limiter, clock, 3, [
        [t0, "k", 1, true, 2, 0, 334], // 333.3… rounded up
        [t0, "k", 1, true, 1, 0, 667],
        [t0, "k", 1, true, 0, 0, 1000],
        [t0, "k", 1, false, 0, 334, 1000], // exact 333.3… → 334
        [t0 + 333, "k", 1, false, 0, 1, 667], // exact: 1000.3… > 1000
        [t0 + 334, "k", 1, true, 0, 0, 1000], // exact: 999.3… ≤ 1000
      ]);
    }
  });

  it("never hangs or errs at epoch-ms instants when cost·T = τ is inexact", () => {
    // (now + T) − now rounds above T here; the step once looped forever on the first request.
    const clock = new ManualClock(1_760_000_000_000);
    const limiter = createLimiter({ algorithm: "gcra", limit: 6, periodMs: 1000, burst: 1 }, clock);
    runTable(limiter, clock, 1, [
      [1_760_000_000_000, "k", 1, true, 0, 0, 167],
      [1_760_000_000_001, "k", 1, false, 0, 166, 166],
      [1_760_000_000_167, "k", 1, true, 0, 0, 167],
    ]);
    const seven = createLimiter({ algorithm: "gcra", limit: 7, periodMs: 1000 }, clock);
    clock.set(1_760_000_000_000);
    const burst = Array.from({ length: 8 }, () => seven.tryAcquire("k") as Decision);
    expect(burst.map((d) => d.allowed)).toEqual([true, true, true, true, true, true, true, false]);
    expect(burst.map((d) => d.remaining)).toEqual([6, 5, 4, 3, 2, 1, 0, 0]);
    expect(burst.map((d) => d.resetMs)).toEqual([143, 286, 429, 572, 715, 858, 1000, 1000]);
    expect(burst[7]?.retryAfterMs).toBe(143);
  });

  it("with burst = limit admits what the token bucket of capacity limit, rate 1000·limit/periodMs admits", () => {
    const clock = new ManualClock();
    const g = createLimiter({ algorithm: "gcra", limit: 5, periodMs: 1000 }, clock);
    const b = createLimiter({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 5 }, clock);
    const trace: Array<[number, number]> = [
      [0, 3],
      [0, 2],
      [0, 1],
      [150, 1],
      [200, 1],
      [201, 1],
      [650, 2],
      [800, 2],
      [2000, 5],
      [2100, 1],
      [2399, 2],
      [2400, 2],
    ];
    for (const [t, cost] of trace) {
      clock.set(t);
      const dg = g.tryAcquire("k", cost) as Decision;
      const db = b.tryAcquire("k", cost) as Decision;
      expect({ t, ...dg }).toEqual({ t, ...db });
    }
  });

  it("the step: a denial and a peek leave the state record as it was", () => {
    const step = gcra({ algorithm: "gcra", limit: 2, periodMs: 100, burst: 2 });
    const state = step.create();
    step.step(state, 0, 2, true);
    const snapshot = { ...state };
    expect(step.step(state, 10, 1, true)).toMatchObject({ allowed: false, retryAfterMs: 40 });
    expect(step.step(state, 10, 1, false)).toEqual(step.step(state, 10, 1, false));
    expect(state).toEqual(snapshot);
  });
});

describe("leaky-bucket", () => {
  it("I = 500, τ = 1500: delayMs turns a burst into one admission every 500 ms", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 2 }, clock);
    runTable(limiter, clock, 3, [
      [0, "k", 1, true, 2, 0, 500, 0],
      [0, "k", 1, true, 1, 0, 1000, 500],
      [0, "k", 1, true, 0, 0, 1500, 1000],
      [0, "k", 1, false, 0, 500, 1500, 0], // the queue is full
      [0, "k", 4, false, 0, INF, 1500, 0], // more than the queue holds
      [500, "k", 1, true, 0, 0, 1500, 1000], // leaves at 1500
      [600, "k", 1, false, 0, 400, 1400, 0],
      [1000, "k", 1, true, 0, 0, 1500, 1000], // leaves at 2000
      [1000, "x", 2, true, 1, 0, 1000, 0], // a weighted request leaves at once, holds 2 slots
    ]);
  });

  it("a burst of capacity at one instant leaves at a constant rate", () => {
    const clock = new ManualClock(42_000);
    const limiter = createLimiter({ algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 4 }, clock);
    const delays = Array.from({ length: 10 }, () => (limiter.tryAcquire("k") as Decision).delayMs);
    expect(delays).toEqual([0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250]);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: false, retryAfterMs: 250, delayMs: 0 });
  });

  it("an inexact interval (leakPerSecond 3 → I = 333.3…) rounds delays up", () => {
    const clock = new ManualClock(1_760_000_000_000);
    const limiter = createLimiter({ algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 3 }, clock);
    const delays = Array.from({ length: 3 }, () => (limiter.tryAcquire("k") as Decision).delayMs);
    expect(delays).toEqual([0, 334, 667]);
  });
});

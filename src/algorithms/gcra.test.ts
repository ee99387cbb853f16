// gcra and leaky-bucket against docs/semantics.md §5: T = periodMs / limit (or 1000 / leakPerSecond),
// τ = burst·T (or capacity·T); start = max(tat, now), next = start + cost·T; allowed iff
// next − now ≤ τ; remaining = floor((τ − (tat − now)) / T) after the decision;
// retryAfterMs = ceil(next − τ − now); resetMs = ceil(tat − now); delayMs = ceil(start − now).
import { createLimiter, type Decision, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { emissionInterval, gcra } from "./gcra.ts";
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

/** Today's epoch in ms: a float64 ulp here is ~2.4e-4 ms, coarser than these intervals. */
const EPOCH = 1_800_000_000_000;

/** How many of `n` cost-1 requests at one instant `at` pass. */
function admittedAtOnce(spec: Parameters<typeof createLimiter>[0], at: number, n: number): number {
  const limiter = createLimiter(spec, new ManualClock(at));
  let admitted = 0;
  for (let i = 0; i < n; i++) if ((limiter.tryAcquire("k") as Decision).allowed) admitted++;
  return admitted;
}

describe("exact at any clock value (sub-µs emission intervals)", () => {
  it.each([
    ["gcra 100,000/s burst 5", { algorithm: "gcra", limit: 100_000, periodMs: 1000, burst: 5 }, 100, 5],
    ["leaky 50,000/s capacity 1", { algorithm: "leaky-bucket", capacity: 1, leakPerSecond: 50_000 }, 100, 1],
    ["gcra 10M/s burst 100", { algorithm: "gcra", limit: 10_000_000, periodMs: 1000, burst: 100 }, 1_000_000, 100],
    ["gcra 1e9/min burst 7", { algorithm: "gcra", limit: 1e9, periodMs: 60_000, burst: 7 }, 1000, 7],
  ] as const)("%s admits its burst at one instant, at 0 and at today's epoch", (_name, spec, offered, burst) => {
    expect(admittedAtOnce(spec, 0, offered)).toBe(burst);
    expect(admittedAtOnce(spec, EPOCH, offered)).toBe(burst);
    expect(admittedAtOnce(spec, EPOCH + 0.5, offered)).toBe(burst);
  });

  it("gcra 100,000/s burst 5 at today's epoch: T = 0.01 ms, whole figures rounded up", () => {
    const clock = new ManualClock(EPOCH);
    const limiter = createLimiter({ algorithm: "gcra", limit: 100_000, periodMs: 1000, burst: 5 }, clock);
    runTable(limiter, clock, 5, [
      [EPOCH, "k", 1, true, 4, 0, 1],
      [EPOCH, "k", 4, true, 0, 0, 1], // tat now + 0.05
      [EPOCH, "k", 1, false, 0, 1, 1], // 0.06 − 0.05 → 1 ms
      [EPOCH + 1, "k", 5, true, 0, 0, 1], // drained: 100 emissions in 1 ms
      [EPOCH + 1, "k", 6, false, 0, INF, 1],
    ]);
  });

  it("gcra 1e9/min: remaining never above the limit; the first check leaves limit − 1", () => {
    const clock = new ManualClock(EPOCH);
    const limiter = createLimiter({ algorithm: "gcra", limit: 1e9, periodMs: 60_000 }, clock);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: true, limit: 1e9, remaining: 999_999_999, resetMs: 1 });
    expect(limiter.tryAcquire("k", 1e9 - 1)).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
    expect(limiter.peek("k")).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1 });
    clock.advance(60_000);
    expect(limiter.peek("k")).toMatchObject({ allowed: true, remaining: 1e9 - 1, resetMs: 1 });
  });

  it("a trace decides identically at 0 and at today's epoch (inexact 1e9/7 ms interval, refunds)", () => {
    const spec = { algorithm: "gcra", limit: 7, periodMs: 1e9, burst: 3 } as const;
    const run = (t0: number) => {
      const clock = new ManualClock(t0);
      const limiter = createLimiter(spec, clock);
      const out: Decision[] = [];
      for (const [gap, cost, refund] of [
        [0, 1, 0],
        [0, 2, 0],
        [1, 1, 0],
        [142_857_142, 1, 0],
        [1, 1, 0],
        [0, 0, 1],
        [0, 1, 0],
        [5e9, 3, 0],
      ] as const) {
        clock.advance(gap);
        out.push((refund ? limiter.refund("k", refund) : limiter.tryAcquire("k", cost)) as Decision);
      }
      return out;
    };
    expect(run(EPOCH)).toEqual(run(0));
    // T = 142,857,142.857… ms, τ = 3T: 142,857,143 ms after a full burst one more fits, 1 ms
    // later none; a refund gives that one back.
    expect(run(0).map((d) => d.allowed)).toEqual([true, true, false, true, false, true, true, true]);
  });
});

describe("emissionInterval", () => {
  it("is the exact fraction in lowest terms; a rate is read as its decimal", () => {
    expect(emissionInterval({ algorithm: "gcra", limit: 3, periodMs: 1000 })).toEqual({
      per: 1000,
      den: 3,
      burst: 3,
      exact: true,
    });
    expect(emissionInterval({ algorithm: "gcra", limit: 1e9, periodMs: 60_000, burst: 5 })).toEqual({
      per: 3,
      den: 50_000,
      burst: 5,
      exact: true,
    });
    expect(emissionInterval({ algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 0.1 })).toEqual({
      per: 10_000,
      den: 1,
      burst: 2,
      exact: true,
    });
    expect(emissionInterval({ algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 1.5e-7 })).toMatchObject({
      per: 20_000_000_000, // 1000 / 1.5e-7 = 2e10/3 ms
      den: 3,
      exact: true,
    });
  });

  it("rounds an interval that does not fit 52 bits up (never admits more), within burst/den ms", () => {
    const third = emissionInterval({ algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 1 / 3 });
    expect(third.exact).toBe(false);
    expect(third.per * third.burst).toBeLessThanOrEqual(2 ** 52);
    // per/den ≥ 3000.0000000000003 (1000 / 0.3333333333333333), by less than a tick.
    const exact = 10_000_000_000_000_000_000n; // 1000 · 10^16 / 3333333333333333, as a fraction
    expect(BigInt(third.per) * 3_333_333_333_333_333n >= exact * BigInt(third.den)).toBe(true);
    expect(BigInt(third.per - 1) * 3_333_333_333_333_333n < exact * BigInt(third.den)).toBe(true);
    const primes = emissionInterval({ algorithm: "gcra", limit: 999_983, periodMs: 31_536_000_007 });
    expect(primes.exact).toBe(false);
    expect(primes.per * primes.burst).toBeLessThanOrEqual(2 ** 52);
  });
});

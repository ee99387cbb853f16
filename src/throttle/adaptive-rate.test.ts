// The adaptive rate at fixed instants (ManualClock): the AIMD steps as a table, then a throttle
// whose rate a 429 cuts and time restores, counted as starts per fixed window; two throttles on
// one store share the cut; the floor and the ceiling hold; bad options name themselves.
import { ConfigError, createLimiter, createThrottle, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import {
  ADAPTIVE_DEFAULTS,
  type AdaptiveParams,
  afterCut,
  recovered,
  resolveAdaptive,
  scaledCost,
} from "./adaptive-rate.ts";
import { AdaptiveRate } from "./adaptive-rate-store.ts";

const T0 = Date.UTC(2026, 11, 7);
const P: AdaptiveParams = { cut: 0.5, recoverPerSecond: 0.1, floor: 0.2, refreshMs: 1000 };
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const tooMany = (seconds: number) => ({ status: 429, headers: { "retry-after": String(seconds) } });

describe("the AIMD steps", () => {
  it.each([
    [1, 0.5],
    [0.5, 0.25],
    [0.3, 0.2], // the floor
    [0.2, 0.2],
  ])("a cut of %d gives %d", (f, want) => expect(afterCut(f, P)).toBe(want));

  it.each([
    [0.5, 0, 0.5],
    [0.5, 1000, 0.6],
    [0.5, 2500, 0.75],
    [0.5, 60_000, 1], // never above the configured rate
    [0.2, -5, 0.2], // a clock read out of order recovers nothing
  ])("%d recovers to %d after %d ms", (f, ms, want) => expect(recovered(f, ms, P)).toBeCloseTo(want, 12));

  it("spends cost / factor units per job on average, whole units, within [cost, maxCost], the rest as a penalty", () => {
    const takes = (cost: number, f: number, n: number, maxCost = 100) => {
      let owed = 0;
      const out: Array<number | string> = [];
      for (let i = 0; i < n; i++) {
        const s = scaledCost(cost, f, owed, maxCost);
        out.push(s.extra === 0 ? s.take : `${s.take}+${s.extra}`);
        owed = s.owed;
      }
      return out;
    };
    expect(takes(1, 1, 4)).toEqual([1, 1, 1, 1]);
    expect(takes(1, 0.5, 3)).toEqual([2, 2, 2]);
    expect(takes(1, 0.75, 6)).toEqual([1, 1, 2, 1, 1, 2]); // 8 units for 6 jobs: 0.75
    expect(takes(3, 0.6, 3)).toEqual([5, 5, 5]);
    // The rate admits 4 at once: the other 6 of 10 are a penalty (a cost above the limit would never pass).
    expect(takes(1, 0.1, 2, 4)).toEqual(["4+6", "4+6"]);
    // burst: 1 (bottleneck's minTime): one unit admitted, the rest spent after it.
    expect(takes(1, 0.5, 3, 1)).toEqual(["1+1", "1+1", "1+1"]);
    expect(takes(1, 0.75, 3, 1)).toEqual([1, 1, "1+1"]);
  });

  it("checks the option", () => {
    expect(resolveAdaptive(undefined)).toBeUndefined();
    expect(resolveAdaptive(false)).toBeUndefined();
    expect(resolveAdaptive(true)).toEqual(ADAPTIVE_DEFAULTS);
    expect(resolveAdaptive({ floor: 0.3 })).toEqual({ ...ADAPTIVE_DEFAULTS, floor: 0.3 });
    expect(() => resolveAdaptive({ cut: 1 })).toThrow(/`adaptive.cut` must be a number in \(0, 1\) \(got 1\)/);
    expect(() => resolveAdaptive({ floor: 0 })).toThrow(/`adaptive.floor` must be a number in \(0, 1\]/);
    expect(() => resolveAdaptive({ recoverPerSecond: -1 })).toThrow(/recoverPerSecond/);
    expect(() => resolveAdaptive({ refreshMs: 0.5 })).toThrow(/refreshMs/);
    expect(() => resolveAdaptive({ cutt: 0.5 })).toThrow(/cutt/);
    expect(() => resolveAdaptive("yes")).toThrow(ConfigError);
    expect(() => createThrottle({ concurrency: 1, adaptive: true })).toThrow(/`adaptive` needs `rate`/);
  });
});

/** Starts per window of 1 s of a throttle fed 200 jobs at T0, with 429s observed at `cuts` (s). */
async function startsPerWindow(options: { adaptive: object | boolean }, cuts: number[], seconds: number) {
  const clock = new ManualClock(T0);
  const throttle = createThrottle({
    rate: { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
    clock,
    ...options,
  });
  const starts: number[] = [];
  const jobs = Array.from({ length: 200 }, () => throttle.schedule(() => starts.push(clock.now())));
  for (let s = 0; s < seconds; s++) {
    if (cuts.includes(s)) await throttle.observe("default", tooMany(1));
    clock.advance(1000);
    await settle();
  }
  await throttle.close();
  await Promise.allSettled(jobs);
  const per = Array.from({ length: seconds }, () => 0);
  for (const at of starts) if (at < T0 + seconds * 1000) (per[Math.floor((at - T0) / 1000)] as number)++;
  return per;
}

describe("a throttle with `adaptive`", () => {
  it("a 429 cuts the rate; time without one restores it, never above the configured rate", async () => {
    // Second 0: 10 start, then the 429 (pause 1 s, factor 0.5). Second 1: 0.6 → 6 jobs in 10 units;
    // then 0.7, 0.8, 0.9, 1 (recoverPerSecond 0.1): each window holds ≈ 10 × factor starts. But
    // second 2 opens as the pause's cool-down ends (T0 + 2000): the burst refilled during both
    // is charged then (coolDownEnd's rule), one unit left, so that window holds one start.
    expect(await startsPerWindow({ adaptive: P }, [0], 8)).toEqual([10, 6, 1, 8, 9, 10, 10, 10]);
    // Without `adaptive` the same 429 only pauses (and cools down: second 2 holds one start).
    expect(await startsPerWindow({ adaptive: false }, [0], 4)).toEqual([10, 10, 1, 10]);
  });

  it("429 after 429 stops at the floor, and recovers from it", async () => {
    const per = await startsPerWindow({ adaptive: { ...P, recoverPerSecond: 0.01 } }, [0, 1, 2, 3, 4], 8);
    // Factors 1 → 0.5 → 0.25 → 0.2 (the floor) → 0.2 …; each cut pauses its second's window.
    // Second 6 opens as the last cool-down ends: charged to one unit, less than a job of 5 units
    // (factor 0.2) takes, so it holds none (coolDownEnd's rule).
    expect(per).toEqual([10, 5, 2, 2, 2, 2, 0, 2]);
  });

  it("one pause cuts once, however many of its requests come back 429", async () => {
    const clock = new ManualClock(T0);
    const rate = new AdaptiveRate(new MemoryStore(), "x", clock, P, 100);
    await rate.cut("k", 1000);
    await rate.cut("k", 1000);
    clock.advance(999);
    await rate.cut("k", 1000);
    expect(rate.factor("k")).toBeCloseTo(0.5999, 3);
    clock.advance(1);
    await rate.cut("k", 1000); // a new pause: a new cut (0.6 → 0.3)
    expect(rate.factor("k")).toBeCloseTo(0.3, 3);
  });

  it("two throttles on one store share the factor: one's 429 slows the other", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const rate = { algorithm: "fixed-window", limit: 10, windowMs: 1000 } as const;
    const a = createThrottle({ name: "api", store, rate, clock, adaptive: P });
    const b = createThrottle({ name: "api", store, rate, clock, adaptive: P });
    await a.observe("k", tooMany(1)); // a's 429 (a runs nothing more here)
    clock.advance(1000);
    let started = 0;
    const jobs = Array.from({ length: 20 }, () => b.schedule(() => started++, { key: "k" }));
    await settle();
    expect(started).toBe(6); // b reads the fleet's 0.6, though it never saw a 429
    await Promise.all([a.close(), b.close()]);
    await Promise.allSettled(jobs);
  });

  it("a 429 that arrives while the fleet is paused belongs to that pause: no second cut", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const rate = { algorithm: "fixed-window", limit: 10, windowMs: 1000 } as const;
    const a = createThrottle({ name: "api", store, rate, clock, adaptive: P });
    const b = createThrottle({ name: "api", store, rate, clock, adaptive: P });
    await a.observe("k", tooMany(1));
    clock.advance(10);
    await b.observe("k", tooMany(1)); // b's request was in flight when a paused the key
    clock.advance(1000); // b's own pause ends at T0 + 1010
    let started = 0;
    const jobs = Array.from({ length: 20 }, () => b.schedule(() => started++, { key: "k" }));
    await settle();
    expect(started).toBe(6); // one cut (0.5, recovered to 0.6), not two (0.25 → 0.35: 3)
    await Promise.all([a.close(), b.close()]);
    await Promise.allSettled(jobs);
  });

  it("a process learns a cut from the pause its permit runs into", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const a = new AdaptiveRate(store, "x", clock, { ...P, refreshMs: 60_000 }, 100);
    const b = new AdaptiveRate(store, "x", clock, { ...P, refreshMs: 60_000 }, 100);
    const limiter = b.wrap(
      createLimiter({ algorithm: "fixed-window", limit: 10, windowMs: 1000 }, { store, clock, name: "rate" }),
    );
    expect(b.factor("k")).toBe(1); // read now: the next read is 60 s away
    await a.cut("k", 1000);
    expect(b.factor("k")).toBe(1);
    limiter.block("k", 1000);
    expect((limiter.tryAcquire("k") as Decision).allowed).toBe(false); // refused by the pause: b reads again
    expect(b.factor("k")).toBeCloseTo(0.5, 3);
  });

  it("slows a rate of `burst: 1` (bottleneck's minTime) by a longer interval: a job admits one unit, the rest is a penalty", async () => {
    const clock = new ManualClock(T0);
    // Recovery all but off: the factor stays at the cut (0.5) for the table.
    const params = { ...P, recoverPerSecond: 1e-6 };
    const t = createThrottle({
      rate: { algorithm: "gcra", limit: 1, periodMs: 100, burst: 1 },
      clock,
      adaptive: params,
    });
    await t.observe("default", tooMany(1));
    const starts: number[] = [];
    const jobs = Array.from({ length: 5 }, () => t.schedule(() => starts.push(clock.now() - T0)));
    for (let i = 0; i < 25; i++) {
      clock.advance(100);
      await settle();
    }
    // Before: [1000, 1100, 1200, 1300, 1400], the configured rate whatever the factor. Now 2 units
    // a job (one admitted, one a penalty: 200 ms apart), but for one job of 1 unit: the factor sits
    // a hair above 0.5 (the recovery), and its fraction, carried, falls due once.
    expect(starts).toEqual([1000, 1200, 1300, 1500, 1700]);
    await t.close();
    await Promise.all(jobs);
  });

  it("remembers a bounded number of keys: those back at the full rate go first", async () => {
    const clock = new ManualClock(T0);
    const rate = new AdaptiveRate(new MemoryStore(), "x", clock, P, 100);
    await rate.cut("cut", 1000);
    for (let i = 0; i < 10_050; i++) rate.factor(`k${i}`);
    expect(rate.size).toBeLessThanOrEqual(10_000);
    expect(rate.factor("cut")).toBeCloseTo(0.5, 3); // still known: it is below the full rate
  });
});

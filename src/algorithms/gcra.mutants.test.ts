// gcra / leaky-bucket state operations one by one (refund with and without a receipt, force,
// summary, freshAt, the far-ahead step, a state written under another tick size), at fixed
// instants of today's epoch. Written for the mutation run's survivors (docs/testing.md,
// "Mutation testing"). Most rows use limit 3 per 1000 ms: T = 1000/3 ms, a tick is 1/3 ms.
import { describe, expect, it } from "vitest";
import { emissionInterval, type GcraState, gcra, leakyBucket } from "./gcra.ts";

const T = Date.UTC(2026, 11, 1);
const INF = Number.POSITIVE_INFINITY;
const thirds = gcra({ algorithm: "gcra", limit: 3, periodMs: 1000 }); // per 1000 ticks, den 3, τ 3000 ticks
const fifths = gcra({ algorithm: "gcra", limit: 5, periodMs: 1000 }); // per 200, den 1, τ 1000
/** tat = T + 500 + 1/3 ms */
const S: GcraState = { ms: T + 500, ticks: 1, den: 3 };

describe("gcra: state operations", () => {
  it("describes itself; fresh at its arrival time, rounded up to a whole ms", () => {
    expect(thirds).toMatchObject({ kind: "gcra", limit: 3, horizonMs: 1001, shape: "gcra" });
    expect(gcra({ algorithm: "gcra", limit: 2, periodMs: 1000, burst: 4 }).horizonMs).toBe(2001);
    expect(leakyBucket({ algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 4 })).toMatchObject({
      kind: "leaky-bucket",
      limit: 2,
      horizonMs: 501,
      shape: "leaky-bucket",
    });
    expect(thirds.create()).toEqual({ ms: -INF, ticks: 0, den: 3 });
    expect(thirds.freshAt(S)).toBe(T + 501);
    expect(thirds.freshAt({ ms: T + 500, ticks: 0, den: 3 })).toBe(T + 500);
    expect(thirds.summary.slots).toBe(2);
  });

  // [state, now, cost, receipt, state after]
  const refunds: Array<[GcraState, number, number, number | undefined, GcraState]> = [
    [S, T, 1, undefined, { ms: T + 167, ticks: 0, den: 3 }], // 500⅓ − 333⅓
    [S, T, 2, undefined, { ms: T, ticks: 0, den: 3 }], // never before now
    [S, T + 500, 1, undefined, { ms: T + 500, ticks: 0, den: 3 }], // ⅓ ms of backlog left
    [S, T + 500.5, 1, undefined, S], // now (tick 1) is the arrival time: no backlog
    [S, T + 501, 1, undefined, S],
    [S, T + 100, 1, T, { ms: T + 267, ticks: 0, den: 3 }], // 100 ms drained since the check
    [S, T + 100, 1, T - 1000, S], // all of it drained already
    [S, T + 100, 1, T + 100, { ms: T + 167, ticks: 0, den: 3 }],
    [S, T + 100, 1, T + 200, { ms: T + 167, ticks: 0, den: 3 }], // a receipt from "later"
    // Written with 1/7-ms ticks: read as the next whole ms, T + 501, then 333⅓ back.
    [{ ms: T + 500, ticks: 1, den: 7 }, T, 1, undefined, { ms: T + 167, ticks: 2, den: 3 }],
    [{ ms: T + 500, ticks: 0, den: 7 }, T, 1, undefined, { ms: T + 166, ticks: 2, den: 3 }],
  ];
  it.each(refunds)("refund of %o at %d, cost %d, receipt %s", (before, now, cost, at, after) => {
    const state = { ...before };
    thirds.refund(state, now, cost, at);
    expect(state).toEqual(after);
  });

  // [state, now, cost, state after]
  const forces: Array<[GcraState, number, number, GcraState]> = [
    [S, T, 1, { ms: T + 833, ticks: 2, den: 3 }], // ahead: from the arrival time
    [S, T + 500.9, 1, { ms: T + 834, ticks: 0, den: 3 }], // now (tick 2) is past it: from now
    [{ ms: T + 500, ticks: 0, den: 3 }, T + 500.9, 1, { ms: T + 834, ticks: 0, den: 3 }],
    [{ ms: -INF, ticks: 0, den: 3 }, T + 0.5, 1, { ms: T + 333, ticks: 2, den: 3 }],
    [{ ms: T + 500, ticks: 1, den: 7 }, T, 2, { ms: T + 1167, ticks: 2, den: 3 }],
  ];
  it.each(forces)("force on %o at %d, cost %d", (before, now, cost, after) => {
    const state = { ...before };
    thirds.force?.(state, now, cost);
    expect(state).toEqual(after);
  });

  it("far ahead (a clock stepped back past τ): figures from whole ms and ticks", () => {
    // tat T + 5000⅓: reset ⌈5000⅓⌉; a unit passes at tat + ⅓·1000 − 1000 = T + 4333⅔.
    const far: GcraState = { ms: T + 5000, ticks: 1, den: 3 };
    expect(thirds.step({ ...far }, T, 1, true)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      retryAfterMs: 4334,
      resetMs: 5001,
      delayMs: 0,
    });
    expect(thirds.step({ ...far }, T, 4, true)).toMatchObject({ allowed: false, retryAfterMs: INF, resetMs: 5001 });
    expect(thirds.step({ ...far }, T, 3, true)).toMatchObject({ allowed: false, retryAfterMs: 5001 }); // a whole burst
    expect(fifths.step({ ms: T + 5000, ticks: 0, den: 1 }, T, 2, true)).toMatchObject({
      retryAfterMs: 4400,
      resetMs: 5000,
    });
    // Just inside and just past the far bound (nearMs = 1001 for fifths) the figures agree.
    for (const ahead of [1000, 1001, 1002, 1003]) {
      expect(fifths.step({ ms: T + ahead, ticks: 0, den: 1 }, T, 1, false)).toEqual({
        allowed: false,
        limit: 5,
        remaining: 0,
        retryAfterMs: ahead - 800,
        resetMs: ahead,
        delayMs: 0,
      });
    }
  });

  it("a state written with another tick size is read rounded up to the next ms, never earlier", () => {
    // tat T + 300 + 1/7: read as T + 301; a unit at T leaves a backlog of 301 + 333⅓ ms.
    expect(thirds.step({ ms: T + 300, ticks: 1, den: 7 }, T, 1, false)).toMatchObject({
      allowed: true,
      resetMs: 635,
    });
    expect(thirds.step({ ms: T + 300, ticks: 0, den: 7 }, T, 1, false)).toMatchObject({ resetMs: 634 });
  });

  // [cell before [ms, fraction], state joined, cell after]
  const joins: Array<[[number, number], GcraState, [number, number]]> = [
    [[Number.NaN, Number.NaN], S, [T + 500, 1 / 3]],
    [[T + 500, 0.5], S, [T + 500, 0.5]],
    [[T + 500, 0.2], S, [T + 500, 1 / 3]],
    [[T + 499, 0.9], { ms: T + 500, ticks: 0, den: 3 }, [T + 500, 0]],
    [[T + 501, 0], { ms: T + 500, ticks: 2, den: 3 }, [T + 501, 0]],
  ];
  it.each(joins)("summary: %o joined with %o", (cell, state, after) => {
    const cells = new Float64Array([7, 7, ...cell, 7, 7]);
    thirds.summary.join(cells, 2, state);
    expect([...cells]).toEqual([7, 7, ...after, 7, 7]);
  });

  it("summary: read back in the rule's ticks, rounded up (a whole ms carries)", () => {
    const read = (ms: number, frac: number, rule = thirds) => rule.summary.read(new Float64Array([7, ms, frac]), 1);
    expect(read(Number.NaN, Number.NaN)).toBeUndefined();
    expect(read(T + 500, 1 / 3)).toEqual({ ms: T + 500, ticks: 1, den: 3 });
    expect(read(T + 500, 0)).toEqual({ ms: T + 500, ticks: 0, den: 3 });
    expect(read(T + 500, 0.4)).toEqual({ ms: T + 500, ticks: 2, den: 3 });
    expect(read(T + 500, 0.9999)).toEqual({ ms: T + 501, ticks: 0, den: 3 });
    expect(read(T + 500, 0.5, fifths)).toEqual({ ms: T + 501, ticks: 0, den: 1 });
  });
});

describe("emissionInterval: rates as written", () => {
  it("reads a leak rate as its decimal text", () => {
    expect(emissionInterval({ algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 2.5 })).toEqual({
      per: 400,
      den: 1,
      burst: 3,
      exact: true,
    });
    expect(emissionInterval({ algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 4e21 })).toEqual({
      per: 1, // 1/4e18 ms needs finer ticks than 2^50 per ms: rounded up to 1/2^50
      den: 2 ** 50,
      burst: 3,
      exact: false,
    });
  });

  it("refuses what is not a positive finite number, naming it", () => {
    for (const bad of [-1, Number.NaN, INF]) {
      expect(() => emissionInterval({ algorithm: "leaky-bucket", capacity: 3, leakPerSecond: bad })).toThrow(
        new RangeError(`not a positive finite number: ${bad}`),
      );
    }
  });

  it("an interval too fine for τ's 52 bits is rounded up to the finest tick that fits", () => {
    // burst·per > 2^52 ticks: den2 = ⌊(2^52 − burst)·den / (burst·per)⌋, per2 = ⌈per·den2 / den⌉.
    expect(emissionInterval({ algorithm: "gcra", limit: 3, periodMs: 2 ** 51 - 1 })).toEqual({
      per: 750_599_937_895_083, // ⌈(2^51 − 1)/3⌉ with den2 = ⌊(2^52 − 3)/(2^51 − 1)⌋ = 1
      den: 1,
      burst: 3,
      exact: false,
    });
    expect(emissionInterval({ algorithm: "gcra", limit: 7, periodMs: 1e15 + 6 })).toEqual({
      per: 571_428_571_428_575, // ⌈4·(1e15 + 6)/7⌉: 4·(1e15 + 6) is 6 mod 7
      den: 4,
      burst: 7,
      exact: false,
    });
    expect(emissionInterval({ algorithm: "gcra", limit: 7, periodMs: 1e15 + 3 })).toEqual({
      per: 285_714_285_714_287, // ⌈4·(1e15 + 3)/7⌉ = 571 428 571 428 574, over den 4: halved
      den: 2,
      burst: 7,
      exact: false,
    });
  });
});

describe("gcra: ticks within a ms (den 3) and a fractional clock", () => {
  it("refund: the backlog adds the state's ticks (1001 ticks > 1000 given back: one tick stays)", () => {
    const s: GcraState = { ms: T + 333, ticks: 2, den: 3 };
    thirds.refund(s, T, 1);
    expect(s).toEqual({ ms: T, ticks: 1, den: 3 });
  });

  it.each([
    // [state, state after a force of 1 at T]
    [
      { ms: T, ticks: 2, den: 3 },
      { ms: T + 334, ticks: 0, den: 3 },
    ], // ahead by 2 ticks within this ms
    [
      { ms: T - 10, ticks: 2, den: 3 },
      { ms: T + 333, ticks: 1, den: 3 },
    ], // behind: from now
  ] as Array<[GcraState, GcraState]>)("force from %o", (before, after) => {
    const s = { ...before };
    thirds.force?.(s, T, 1);
    expect(s).toEqual(after);
  });

  it.each([
    // [state, now, resetMs, remaining]: T + 0.5 is 1 tick into the ms
    [{ ms: T, ticks: 0, den: 3 }, T + 0.5, 334, 2], // arrival time a tick in the past: no backlog
    [{ ms: T + 1, ticks: 0, den: 3 }, T + 0.5, 334, 1], // 2 ticks ahead: 1002 ticks after, ⌈334⌉
  ] as Array<[GcraState, number, number, number]>)("step from %o at %d", (state, now, resetMs, remaining) => {
    expect(thirds.step({ ...state }, now, 1, false)).toMatchObject({ allowed: true, remaining, resetMs });
  });
});

describe("gcra: an interval exactly at the tick limits is still exact", () => {
  it.each([
    // τ = burst·per = 2^52 ticks exactly (limit 3 per 2^52 ms, burst 1)
    [
      { algorithm: "gcra", limit: 3, periodMs: 2 ** 52, burst: 1 },
      { per: 2 ** 52, den: 3, burst: 1, exact: true },
    ],
    // den = 2^50 exactly (2^50 per ms)
    [
      { algorithm: "gcra", limit: 2 ** 50, periodMs: 1, burst: 1 },
      { per: 1, den: 2 ** 50, burst: 1, exact: true },
    ],
  ] as const)("%o", (spec, interval) => {
    expect(emissionInterval(spec)).toEqual(interval);
  });
});

describe("gcra: a state behind a fractional clock, and a backlog past 2^53 ticks", () => {
  it("refund: an arrival time at or a few ticks behind a fractional now stays where it is", () => {
    // T + 500.9 is tick 2 of its ms; the state is at tick 0 (or 1) of it: nothing to give back.
    for (const before of [
      { ms: T + 500, ticks: 0, den: 3 },
      { ms: T + 500, ticks: 1, den: 3 },
    ]) {
      const s = { ...before };
      thirds.refund(s, T + 500.9, 1);
      expect(s).toEqual(before);
    }
    // Exactly at now, written under 1/7-ms ticks: left as written, not rewritten in this rule's.
    const s: GcraState = { ms: T + 500, ticks: 0, den: 7 };
    thirds.refund(s, T + 500, 1);
    expect(s).toEqual({ ms: T + 500, ticks: 0, den: 7 });
  });

  it("refund with a receipt: exactly one emission drained since leaves the state as written", () => {
    // Checked at T, refunded at T + 333.2: ⌈333.2·3⌉ = 1000 ticks drained, the unit's 1000 given.
    // Written under 1/7-ms ticks (read as T + 501), it is not rewritten in this rule's ticks.
    const s: GcraState = { ms: T + 500, ticks: 1, den: 7 };
    thirds.refund(s, T + 333.2, 1, T);
    expect(s).toEqual({ ms: T + 500, ticks: 1, den: 7 });
  });

  it("far ahead at 2^50 ticks per ms: the tick past whole ms is not lost", () => {
    // τ = 1 tick; the state is 100 ms and 1 tick ahead. Formed as 100·2^50 + 1 ticks, the
    // backlog would round to 100·2^50 (past 2^53) and both figures would read 100.
    const fine = gcra({ algorithm: "gcra", limit: 2 ** 50, periodMs: 1, burst: 1 });
    expect(fine.step({ ms: T + 100, ticks: 1, den: 2 ** 50 }, T, 1, false)).toEqual({
      allowed: false,
      limit: 1,
      remaining: 0,
      retryAfterMs: 101,
      resetMs: 101,
      delayMs: 0,
    });
  });

  it("a backlog under τ one ms ahead is admitted (the near formula, 10 ticks per ms)", () => {
    // T per emission 1/10 ms, τ = 1 ms. The state is 1 ms ahead of a clock at tick 9: a backlog
    // of 1 tick, so a unit passes.
    const tenths = gcra({ algorithm: "gcra", limit: 10, periodMs: 1 });
    expect(tenths.step({ ms: T + 1, ticks: 0, den: 10 }, T + 0.95, 1, false)).toMatchObject({
      allowed: true,
      remaining: 8,
      resetMs: 1,
    });
  });
});

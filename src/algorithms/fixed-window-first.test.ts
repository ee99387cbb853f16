// fixed-window with anchor "first": a key's window starts at its first counted request and lasts
// W; the first counted request at or after its end opens the next one. Within a window it counts
// as the aligned variant: allowed iff c + cost ≤ limit; retryAfterMs = s + W − now;
// remaining = limit − c; resetMs = c > 0 ? s + W − now : 0.

import fc from "fast-check";
import { ConfigError, createLimiter, ManualClock, RateLimiterService, validateSpec } from "sluice";
import { describe, expect, it } from "vitest";
import { describeSpec } from "../config/describe.ts";
import { type FixedWindowState, fixedWindow } from "./fixed-window.ts";
import { checkRetryHonest, type Row, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;
const FIRST = { algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "first" } as const;

describe("fixed-window, anchor first", () => {
  it("opens each key's window at its first counted request, at 0", () => {
    const clock = new ManualClock();
    const limiter = createLimiter(FIRST, clock);
    const rows: Row[] = [
      [250, "a", 1, true, 2, 0, 1000], // a's window: [250, 1250)
      [700, "a", 2, true, 0, 0, 550],
      [1000, "a", 1, false, 0, 250, 250], // an aligned window would have reset at 1000
      [1249, "a", 1, false, 0, 1, 1], // last ms of a's window
      [1249, "b", 1, true, 2, 0, 1000], // keys are independent: b's window is [1249, 2249)
      [1250, "a", 1, true, 2, 0, 1000], // first ms after it: the next window opens here
      [1250, "a", 5, false, 2, INF, 1000], // cost > limit: never, and nothing consumed
      [1300, "a", 2, true, 0, 0, 950],
      // The clock steps back before the window's start: no time passed, the window holds.
      [1000, "a", 1, false, 0, 1250, 1250],
      [2249, "a", 1, false, 0, 1, 1],
      [2250, "a", 3, true, 0, 0, 1000],
      [5000, "c", 4, false, 3, INF, 0], // a denial on a fresh key opens no window
      [5100, "c", 1, true, 2, 0, 1000], // ... the first counted request does: [5100, 6100)
    ];
    runTable(limiter, clock, 3, rows);
  });

  it("a 15-minute window opened 12 minutes past a clock boundary lasts 15 minutes, at today's epoch", () => {
    const start = 1_800_000_000_000 + 12 * 60_000; // 1.8e12 is a multiple of 15 minutes
    const W = 15 * 60_000;
    const spec = { algorithm: "fixed-window", limit: 5, windowMs: W, anchor: "first" } as const;
    const clock = new ManualClock(start);
    const limiter = createLimiter(spec, clock);
    runTable(limiter, clock, 5, [
      [start, "k", 5, true, 0, 0, W], // aligned: resetMs 180_000
      [start + 3 * 60_000, "k", 1, false, 0, 12 * 60_000, 12 * 60_000], // aligned: a new window, allowed
      [start + W - 1, "k", 1, false, 0, 1, 1],
      [start + W, "k", 1, true, 4, 0, W],
    ]);
    const aligned = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: W }, new ManualClock(start));
    expect(aligned.tryAcquire("k", 5).resetMs).toBe(3 * 60_000);
  });

  it("a denied client returning at retryAfterMs passes, 1 ms earlier it does not (fractional instants too)", () => {
    const clock = new ManualClock(1_800_000_000_000.25);
    const limiter = createLimiter({ ...FIRST, windowMs: 700, limit: 2 }, clock);
    expect(limiter.tryAcquire("k", 2).resetMs).toBe(700);
    clock.advance(100.5);
    checkRetryHonest(limiter, clock, "k", 1);
    // The window is [t0, t0 + 700) with t0 = …000.25: at t0 + 100.5, 599.5 ms to go, rounded up.
    expect(limiter.peek("k").retryAfterMs).toBe(600);
  });

  it("refunds give back only units of the running window, which keeps its start", () => {
    const clock = new ManualClock(1_800_000_000_000);
    const limiter = createLimiter(FIRST, clock);
    limiter.tryAcquire("k", 3);
    clock.advance(400);
    // refund answers what peek then says: 1 unit counted, so a take would leave 1.
    expect(limiter.refund("k", 2)).toMatchObject({ allowed: true, remaining: 1, resetMs: 600 });
    expect(limiter.tryAcquire("k", 2)).toMatchObject({ allowed: true, remaining: 0, resetMs: 600 });
    clock.advance(600); // the window has ended: nothing of it is left to give back
    expect(limiter.refund("k", 1)).toMatchObject({ remaining: 2, resetMs: 1000 });
    clock.advance(250);
    expect(limiter.tryAcquire("k", 3)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
  });

  it("the step: denial and peek leave the state record as it was; fresh again at the window's end", () => {
    const step = fixedWindow({ ...FIRST, limit: 2, windowMs: 100 });
    const state = step.create();
    expect(step.step(state, 150, 2, true).allowed).toBe(true);
    expect(state).toEqual({ w: 150, c: 2 });
    const snapshot = { ...state };
    expect(step.step(state, 160, 1, true)).toMatchObject({ allowed: false, retryAfterMs: 90, resetMs: 90 });
    expect(step.step(state, 260, 1, false)).toMatchObject({ allowed: true, remaining: 1, resetMs: 100 });
    expect(state).toEqual(snapshot);
    expect(step.freshAt(state)).toBe(250);
    expect(step.shape).not.toBe(fixedWindow({ algorithm: "fixed-window", limit: 2, windowMs: 100 }).shape);
  });

  it('validates anchor: "first" and "clock" (the default, left out), nothing else, only on fixed-window', () => {
    expect(validateSpec(FIRST)).toEqual(FIRST);
    expect(validateSpec({ algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "clock" })).toEqual({
      algorithm: "fixed-window",
      limit: 3,
      windowMs: 1000,
    });
    expect(() => validateSpec({ ...FIRST, anchor: "last" })).toThrow(ConfigError);
    expect(() => validateSpec({ ...FIRST, anchor: "last" })).toThrow(
      'anchor must be one of "clock", "first" (got "last")',
    );
    expect(() => validateSpec({ ...FIRST, anchor: 1 })).toThrow(/anchor must be one of/);
    expect(() => validateSpec({ algorithm: "sliding-log", limit: 3, windowMs: 1000, anchor: "first" })).toThrow(
      /unknown field `anchor` for sliding-log/,
    );
    try {
      validateSpec({ ...FIRST, anchor: "last" });
    } catch (error) {
      expect((error as ConfigError).field).toBe("anchor");
    }
  });

  it("check-config and the status page say which anchor a window has", () => {
    expect(describeSpec({ ...FIRST, windowMs: 900_000 })).toBe(
      "at most 3 per 15 minutes from each key's first counted request (up to 6 across a window's end)",
    );
    expect(describeSpec({ algorithm: "fixed-window", limit: 3, windowMs: 900_000 })).toMatch(/clock-aligned/);
  });

  it("a rule switched between aligned and first-hit never reads the other's count", () => {
    const clock = new ManualClock(1_800_000_000_500);
    const service = new RateLimiterService(clock);
    service.addRule("r", { algorithm: "fixed-window", limit: 2, windowMs: 1000 });
    service.check("r", "k", { cost: 2 });
    expect(service.check("r", "k").allowed).toBe(false);
    service.updateRule("r", { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" });
    // A fresh key under the new shape: its window opens now and lasts a full 1000 ms.
    expect(service.check("r", "k")).toMatchObject({ allowed: true, remaining: 1, resetMs: 1000 });
    service.updateRule("r", { algorithm: "fixed-window", limit: 5, windowMs: 1000, anchor: "first" });
    // A new limit keeps the shape, so the count carries over.
    expect(service.check("r", "k")).toMatchObject({ allowed: true, remaining: 3, resetMs: 1000 });
  });

  it("its summary joins states into one that, within its window, denies whatever either denies", () => {
    // (Not beyond: a first-hit window's phase depends on which requests were admitted, so no
    // single window dominates another's future; docs/algorithms-first-hit.md, "Under maxKeys".)
    const step = fixedWindow({ ...FIRST, limit: 4, windowMs: 500 });
    const stateArb = fc.record({ w: fc.integer({ min: 0, max: 2000 }), c: fc.integer({ min: 0, max: 4 }) });
    const seed = 20_261_201;
    fc.assert(
      fc.property(
        stateArb,
        stateArb,
        fc.integer({ min: 0, max: 499 }),
        fc.integer({ min: 1, max: 5 }),
        (a, b, into, cost) => {
          const cells = new Float64Array([Number.NaN, Number.NaN]);
          step.summary.join(cells, 0, a);
          step.summary.join(cells, 0, b);
          const joined = step.summary.read(cells, 0) as FixedWindowState;
          expect(joined.w).toBe(Math.max(a.w, b.w));
          const now = joined.w + into;
          const admitted = step.step({ ...joined }, now, cost, false);
          for (const s of [a, b]) {
            const own = step.step({ ...s }, now, cost, false);
            if (admitted.allowed) expect(own.allowed, `seed ${seed}`).toBe(true);
            // Counted units: the join holds at least what either still counts at `now`.
            if (now < s.w + 500) expect(joined.c, `seed ${seed}`).toBeGreaterThanOrEqual(s.c);
          }
        },
      ),
      { seed, numRuns: 500 },
    );
  });
});

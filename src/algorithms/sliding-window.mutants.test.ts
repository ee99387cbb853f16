// The sliding window's state operations one by one (refund with and without a receipt, force,
// summary, freshAt), at fixed instants of today's epoch. Written for the mutation run's survivors
// (docs/testing.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import { type SlidingWindowState, slidingWindow } from "./sliding-window.ts";

const T = Date.UTC(2026, 11, 1); // a multiple of W
const W = 1000;
const INF = Number.POSITIVE_INFINITY;
const sw = slidingWindow({ algorithm: "sliding-window", limit: 4, windowMs: W });
const S: SlidingWindowState = { w: T, p: 2, c: 3 };

describe("sliding-window: state operations", () => {
  it("describes itself; fresh two windows after one with units, one after one with only a previous count", () => {
    expect(sw).toMatchObject({ kind: "sliding-window", limit: 4, horizonMs: 2 * W, shape: "sliding-window/1000" });
    expect(sw.create()).toEqual({ w: -INF, p: 0, c: 0 });
    expect(sw.freshAt({ w: T, p: 2, c: 1 })).toBe(T + 2 * W);
    expect(sw.freshAt({ w: T, p: 2, c: 0 })).toBe(T + W);
    expect(sw.freshAt({ w: T, p: 0, c: 0 })).toBe(-INF);
    expect(sw.summary.slots).toBe(3);
  });

  // [now, cost, receipt, state after] from S = { w: T, p: 2, c: 3 }
  const refunds: Array<[number, number, number | undefined, SlidingWindowState]> = [
    [T + 500, 1, undefined, { w: T, p: 2, c: 2 }],
    [T + 500, 4, undefined, { w: T, p: 1, c: 0 }], // the current window's first, then the previous
    [T + 500, 9, undefined, { w: T, p: 0, c: 0 }],
    [T - 500, 1, undefined, { w: T, p: 2, c: 2 }], // a clock stepped back keeps the window
    [T + 1500, 1, undefined, { w: T, p: 2, c: 2 }], // the stored window is now the previous one
    [T + 1500, 5, undefined, { w: T, p: 2, c: 0 }],
    [T + 2500, 1, undefined, S], // nothing stored still weighs
    [T + 500, 1, T + 100, { w: T, p: 2, c: 2 }],
    [T + 500, 5, T + 100, { w: T, p: 2, c: 0 }],
    [T + 500, 1, T - 100, { w: T, p: 1, c: 3 }], // counted in the previous window
    [T + 500, 5, T - 100, { w: T, p: 0, c: 3 }],
    [T + 500, 1, T - 1500, S], // two windows back: gone already
    [T + 1500, 1, T + 100, { w: T, p: 2, c: 2 }],
    [T + 1500, 5, T + 100, { w: T, p: 2, c: 0 }],
    [T + 1500, 1, T + 1200, S], // counted in a window the state never stored
    [T + 2500, 1, T + 100, S],
    // A receipt from the previous window (T + 1000) while the state's is two back: nothing of it stored.
    [T + 2500, 1, T + 1200, S],
  ];
  it.each(refunds)("refund at %d, cost %d, receipt %s", (now, cost, at, after) => {
    const state = { ...S };
    sw.refund(state, now, cost, at);
    expect(state).toEqual(after);
  });

  const forces: Array<[number, number, SlidingWindowState]> = [
    [T + 500, 2, { w: T, p: 2, c: 5 }],
    [T + 1500, 2, { w: T + W, p: 3, c: 2 }],
    [T + 2500, 2, { w: T + 2 * W, p: 0, c: 2 }],
    [T - 500, 1, { w: T, p: 2, c: 4 }],
  ];
  it.each(forces)("force at %d, cost %d", (now, cost, after) => {
    const state = { ...S };
    sw.force?.(state, now, cost);
    expect(state).toEqual(after);
  });

  // [cell before [w, p, c], state joined, cell after]
  const joins: Array<[[number, number, number], SlidingWindowState, [number, number, number]]> = [
    [[Number.NaN, Number.NaN, Number.NaN], S, [T, 2, 3]],
    [[T, 2, 1], { w: T, p: 1, c: 3 }, [T, 2, 3]],
    [[T, 2, 1], { w: T + W, p: 0, c: 1 }, [T + W, 1, 1]], // the cell's current is the previous now
    [[T + W, 0, 1], { w: T, p: 5, c: 2 }, [T + W, 2, 1]],
    [[T + 2 * W, 1, 1], { w: T, p: 3, c: 3 }, [T + 2 * W, 1, 1]], // too old to weigh
    [[T, 3, 3], { w: T + 2 * W, p: 0, c: 1 }, [T + 2 * W, 0, 1]],
  ];
  it.each(joins)("summary: %o joined with %o", (cell, state, after) => {
    const cells = new Float64Array([7, 7, ...cell, 7, 7]);
    sw.summary.join(cells, 2, state);
    expect([...cells]).toEqual([7, 7, ...after, 7, 7]);
    expect(sw.summary.read(cells, 2)).toEqual({ w: after[0], p: after[1], c: after[2] });
  });

  it("summary: an empty cell reads as nothing", () => {
    expect(sw.summary.read(new Float64Array([1, Number.NaN, Number.NaN, Number.NaN]), 1)).toBeUndefined();
  });

  it("nothing counted has nothing to reset", () => {
    expect(sw.step(sw.create(), T + 300, 5, false)).toMatchObject({ allowed: false, retryAfterMs: INF, resetMs: 0 });
  });

  it("a denial with nothing in the current window passes at the next window's start", () => {
    // At T + 500 the previous unit weighs 500 of 1000: 4 units need it gone, at T + 1000.
    expect(sw.step({ w: T, p: 1, c: 0 }, T + 500, 4, false)).toMatchObject({
      allowed: false,
      remaining: 3,
      retryAfterMs: 500,
      resetMs: 500,
    });
  });
});

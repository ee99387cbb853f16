// The aligned fixed window's state operations one by one (refund, force, summary, freshAt), at
// fixed instants of today's epoch: the limiter tables beside it reach them only through whole
// stores. Written for the mutation run's survivors (docs/testing.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import { type FixedWindowState, fixedWindow } from "./fixed-window.ts";

const T = Date.UTC(2026, 11, 1); // a multiple of every window below
const W = 1000;
const INF = Number.POSITIVE_INFINITY;
const fw = fixedWindow({ algorithm: "fixed-window", limit: 3, windowMs: W });

describe("fixed-window (aligned): state operations", () => {
  it("describes itself; a fresh state is fresh forever, a stored one at its window's end", () => {
    expect(fw).toMatchObject({ kind: "fixed-window", limit: 3, horizonMs: W, shape: "fixed-window/1000" });
    expect(fw.create()).toEqual({ w: -INF, c: 0 });
    expect(fw.freshAt(fw.create())).toBe(-INF);
    expect(fw.freshAt({ w: T, c: 2 })).toBe(T + W);
    expect(fw.summary.slots).toBe(2);
  });

  // [state before, now, cost, receipt, state after]
  const refunds: Array<[FixedWindowState, number, number, number | undefined, FixedWindowState]> = [
    [{ w: T, c: 3 }, T + 500, 1, undefined, { w: T, c: 2 }],
    [{ w: T, c: 3 }, T + 999, 5, undefined, { w: T, c: 0 }], // never below zero
    [{ w: T, c: 3 }, T + W, 1, undefined, { w: T, c: 3 }], // the window has ended: nothing to give
    [{ w: T, c: 3 }, T - 1, 1, undefined, { w: T, c: 2 }], // a clock stepped back keeps the window
    [{ w: T, c: 3 }, T + 500, 1, T, { w: T, c: 2 }],
    [{ w: T, c: 3 }, T + 500, 2, T + 999, { w: T, c: 1 }],
    [{ w: T, c: 3 }, T + 500, 1, T - 1, { w: T, c: 3 }], // the check was counted in an older window
    [{ w: T, c: 3 }, T + 1500, 1, T + 200, { w: T, c: 3 }],
  ];
  it.each(refunds)("refund of %o at %d, cost %d, receipt %s", (before, now, cost, at, after) => {
    const state = { ...before };
    fw.refund(state, now, cost, at);
    expect(state).toEqual(after);
  });

  // [state before, now, cost, state after]
  const forces: Array<[FixedWindowState, number, number, FixedWindowState]> = [
    [{ w: T, c: 2 }, T + 500, 3, { w: T, c: 5 }], // past the limit in the running window
    [{ w: T, c: 2 }, T + 1500, 2, { w: T + W, c: 2 }], // the next window starts with the units
    [{ w: T, c: 2 }, T - 500, 1, { w: T, c: 3 }], // a clock stepped back keeps the window
    [{ w: -INF, c: 0 }, T + 1, 4, { w: T, c: 4 }],
  ];
  it.each(forces)("force on %o at %d, cost %d", (before, now, cost, after) => {
    const state = { ...before };
    fw.force?.(state, now, cost);
    expect(state).toEqual(after);
  });

  // [cell before ([w, c] or NaN), state joined, cell after]
  const joins: Array<[[number, number], FixedWindowState, [number, number]]> = [
    [[Number.NaN, Number.NaN], { w: T, c: 2 }, [T, 2]],
    [[T, 3], { w: T + W, c: 1 }, [T + W, 1]], // the later window wins, even with fewer units
    [[T + W, 1], { w: T, c: 3 }, [T + W, 1]],
    [[T, 1], { w: T, c: 3 }, [T, 3]], // one window: the larger count
    [[T, 3], { w: T, c: 1 }, [T, 3]],
  ];
  it.each(joins)("summary: %o joined with %o", (cell, state, after) => {
    // The cell sits between two others, which must stay as they were.
    const cells = new Float64Array([7, 7, ...cell, 7, 7]);
    fw.summary.join(cells, 2, state);
    expect([...cells]).toEqual([7, 7, ...after, 7, 7]);
    expect(fw.summary.read(cells, 2)).toEqual({ w: after[0], c: after[1] });
  });

  it("summary: an empty cell reads as nothing", () => {
    expect(fw.summary.read(new Float64Array([1, 1, Number.NaN, Number.NaN]), 2)).toBeUndefined();
    expect(fw.summary.read(new Float64Array([Number.NaN, Number.NaN, 5, 1]), 2)).toEqual({ w: 5, c: 1 });
  });

  it("nothing counted (a fresh key, or cost 0) has nothing to reset", () => {
    expect(fw.step(fw.create(), T + 300, 4, false)).toMatchObject({ allowed: false, retryAfterMs: INF, resetMs: 0 });
    expect(fw.step({ w: T, c: 1 }, T + 300, 4, false)).toMatchObject({ retryAfterMs: INF, resetMs: 700 });
    expect(fw.step(fw.create(), T + 300, 0, true)).toMatchObject({ allowed: true, remaining: 3, resetMs: 0 });
  });
});

const first = fixedWindow({ algorithm: "fixed-window", limit: 3, windowMs: W, anchor: "first" });
const S = T + 250; // a window opened at a first request 250 ms into an aligned one

describe('fixed-window (anchor: "first"): state operations', () => {
  it("describes itself", () => {
    expect(first).toMatchObject({ kind: "fixed-window", limit: 3, horizonMs: W, shape: "fixed-window-first/1000" });
    expect(first.create()).toEqual({ w: -INF, c: 0 });
    expect(first.freshAt({ w: S, c: 1 })).toBe(S + W);
    expect(first.summary.slots).toBe(2);
  });

  const refunds: Array<[FixedWindowState, number, number, FixedWindowState]> = [
    [{ w: S, c: 3 }, S + 999, 1, { w: S, c: 2 }],
    [{ w: S, c: 3 }, S + 10, 5, { w: S, c: 0 }],
    [{ w: S, c: 3 }, S + W, 1, { w: S, c: 3 }], // the window ended exactly now
  ];
  it.each(refunds)("refund of %o at %d, cost %d", (before, now, cost, after) => {
    const state = { ...before };
    first.refund(state, now, cost);
    expect(state).toEqual(after);
  });

  const forces: Array<[FixedWindowState, number, number, FixedWindowState]> = [
    [{ w: S, c: 3 }, S + 999, 2, { w: S, c: 5 }],
    [{ w: S, c: 3 }, S + W, 2, { w: S + W, c: 2 }], // opens the next window at now
    [{ w: -INF, c: 0 }, S, 1, { w: S, c: 1 }],
  ];
  it.each(forces)("force on %o at %d, cost %d", (before, now, cost, after) => {
    const state = { ...before };
    first.force?.(state, now, cost);
    expect(state).toEqual(after);
  });

  const joins: Array<[[number, number], FixedWindowState, [number, number]]> = [
    [[Number.NaN, Number.NaN], { w: S, c: 2 }, [S, 2]],
    [[S, 1], { w: S + 5, c: 3 }, [S + 5, 3]],
    [[S + 5, 1], { w: S, c: 3 }, [S + 5, 3]], // the later start and the larger count, apart
    [[S, 3], { w: S + 5, c: 1 }, [S + 5, 3]],
  ];
  it.each(joins)("summary: %o joined with %o", (cell, state, after) => {
    const cells = new Float64Array([7, 7, ...cell, 7, 7]);
    first.summary.join(cells, 2, state);
    expect([...cells]).toEqual([7, 7, ...after, 7, 7]);
    expect(first.summary.read(cells, 2)).toEqual({ w: after[0], c: after[1] });
  });

  it("summary: an empty cell reads as nothing", () => {
    expect(first.summary.read(new Float64Array([1, 1, Number.NaN, Number.NaN]), 2)).toBeUndefined();
  });

  it("nothing counted has nothing to reset, and cost 0 opens no window", () => {
    expect(first.step(first.create(), S, 4, false)).toMatchObject({ allowed: false, retryAfterMs: INF, resetMs: 0 });
    expect(first.step({ w: S, c: 1 }, S + 300, 4, false)).toMatchObject({ retryAfterMs: INF, resetMs: 700 });
    const state = first.create();
    expect(first.step(state, S, 0, true)).toMatchObject({ allowed: true, remaining: 3, resetMs: 0 });
    expect(state).toEqual(first.create());
  });
});

// The sliding log's state operations one by one (refund with and without a receipt, force, the
// ring buffer's growth, summary, freshAt), at fixed instants of today's epoch. Written for the
// mutation run's survivors (docs/testing.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import { type SlidingLogState, slidingLog } from "./sliding-log.ts";

const T = Date.UTC(2026, 11, 1);
const W = 1000;
const INF = Number.POSITIVE_INFINITY;
const log = slidingLog({ algorithm: "sliding-log", limit: 3, windowMs: W });

/** The logged instants, oldest first. */
const entries = (s: SlidingLogState): number[] =>
  Array.from({ length: s.n }, (_, i) => s.buf[(s.head + i) % s.buf.length] as number);

/** A state holding `ts` (oldest first) in a ring buffer rotated by `head`. */
function state(ts: number[], head = 0, size = ts.length): SlidingLogState {
  const buf = new Array<number>(size).fill(-1);
  ts.forEach((t, i) => {
    buf[(head + i) % size] = t;
  });
  return { buf, head, n: ts.length };
}

describe("sliding-log: state operations", () => {
  it("describes itself; fresh at its newest entry plus a window", () => {
    expect(log).toMatchObject({ kind: "sliding-log", limit: 3, horizonMs: W, shape: "sliding-log/1000" });
    expect(log.create()).toEqual({ buf: [], head: 0, n: 0 });
    expect(log.freshAt(log.create())).toBe(-INF);
    expect(log.freshAt(state([T, T + 100, T + 200], 1))).toBe(T + 200 + W);
    expect(log.summary.slots).toBe(2);
  });

  // [entries, head, now, cost, entries after]
  const refunds: Array<[number[], number, number, number, number[]]> = [
    [[T, T + 100, T + 200], 1, T + 500, 2, [T]], // newest first
    [[T, T + 100, T + 200], 2, T + 500, 5, []],
    // At T + 1050 the entry at T no longer counts: only the two that do come back.
    [[T, T + 100, T + 200], 0, T + 1050, 3, [T]],
    [[T, T + 100, T + 200], 0, T + 1100, 3, [T, T + 100]], // T + 100 is out at exactly T + 1100
    // A clock stepped back reads as the newest entry's instant: T no longer counts there.
    [[T, T + 1200], 0, T + 100, 2, [T]],
  ];
  it.each(refunds)("refund of %o (head %d) at %d, cost %d, no receipt", (ts, head, now, cost, after) => {
    const s = state(ts, head);
    log.refund(s, now, cost);
    expect(entries(s)).toEqual(after);
  });

  // [entries, head, now, cost, receipt, entries after]
  const receipts: Array<[number[], number, number, number, number, number[]]> = [
    [[T + 100, T + 100, T + 200], 1, T + 500, 1, T + 100, [T + 100, T + 200]],
    [[T + 100, T + 100, T + 200], 2, T + 500, 5, T + 100, [T + 200]], // only that instant's
    [[T + 100, T + 200, T + 200], 0, T + 1099, 1, T + 100, [T + 200, T + 200]],
    // At T + 1100 the entry at T + 100 no longer counts: its units are gone already.
    [[T + 100, T + 200, T + 200], 0, T + 1100, 1, T + 100, [T + 100, T + 200, T + 200]],
    // A clock stepped back reads as the newest entry's instant.
    [[T + 100, T + 1200], 0, T + 500, 1, T + 100, [T + 100, T + 1200]],
  ];
  it.each(receipts)("refund of %o (head %d) at %d, cost %d, receipt %d", (ts, head, now, cost, at, after) => {
    const s = state(ts, head);
    log.refund(s, now, cost, at);
    expect(entries(s)).toEqual(after);
  });

  it("a receipt no entry matches changes nothing, not even the buffer's layout", () => {
    const s = state([T + 100, T + 100, T + 200], 1);
    const before = structuredClone(s);
    log.refund(s, T + 500, 1, T + 150);
    expect(s).toEqual(before);
  });

  // [entries, head, size, now, cost, entries after]
  const forces: Array<[number[], number, number, number, number, number[]]> = [
    [[T, T + 100], 0, 2, T + 500, 1, [T, T + 100, T + 500]],
    [[T, T + 100, T + 200], 1, 3, T + 500, 2, [T + 200, T + 500, T + 500]], // the oldest make room
    [[T, T + 100, T + 200], 2, 3, T + 500, 5, [T + 500, T + 500, T + 500]], // at most `limit` kept
    [[T + 200], 0, 3, T - 100, 1, [T + 200, T + 200]], // a clock stepped back: the newest's instant
    [[], 0, 0, T, 2, [T, T]],
  ];
  it.each(forces)("force on %o (head %d, size %d) at %d, cost %d", (ts, head, size, now, cost, after) => {
    const s = state(ts, head, size);
    log.force?.(s, now, cost);
    expect(entries(s)).toEqual(after);
    expect(s.buf.length).toBeLessThanOrEqual(3);
  });

  it("the buffer grows on demand: 4 slots, then doubling, never past the limit", () => {
    const ten = slidingLog({ algorithm: "sliding-log", limit: 10, windowMs: W });
    const s = ten.create();
    const sizes: number[] = [];
    for (let i = 0; i < 12; i++) {
      expect(ten.step(s, T + i, 1, true).allowed).toBe(i < 10);
      sizes.push(s.buf.length);
    }
    expect(sizes).toEqual([4, 4, 4, 4, 8, 8, 8, 8, 10, 10, 10, 10]);
    expect(entries(s)).toEqual(Array.from({ length: 10 }, (_, i) => T + i));
    // A weighted request past the doubling grows to what it needs at once.
    const big = ten.create();
    ten.step(big, T, 6, true);
    expect(big.buf.length).toBe(6);
    // After a window the oldest entries drop and the ring wraps in place.
    for (let i = 0; i < 4; i++) ten.step(s, T + W + i, 1, true);
    expect(s.buf.length).toBe(10);
    expect(entries(s)).toEqual([
      ...Array.from({ length: 6 }, (_, i) => T + 4 + i),
      T + W,
      T + W + 1,
      T + W + 2,
      T + W + 3,
    ]);
  });

  // [cell before ([newest, count] or NaN), entries joined, cell after]
  // biome-ignore format: one row per line
  const joins: Array<[[number, number], number[], [number, number]]> = [
    [[Number.NaN, Number.NaN], [T, T + 100], [T + 100, 2]],
    [[Number.NaN, Number.NaN], [], [Number.NaN, Number.NaN]], // an empty log adds nothing
    [[T + 200, 1], [T, T + 100], [T + 200, 2]],
    [[T + 50, 5], [T, T + 100], [T + 100, 5]], // the later newest and the larger count, apart
  ];
  it.each(joins)("summary: %o joined with %o", (cell, ts, after) => {
    const cells = new Float64Array([7, 7, ...cell, 7, 7]);
    log.summary.join(cells, 2, state(ts, ts.length > 0 ? 1 : 0));
    expect([...cells]).toEqual([7, 7, ...after, 7, 7]);
  });

  it("summary: a cell reads back as its count (at most the limit) of entries at its newest instant", () => {
    expect(log.summary.read(new Float64Array([1, 1, Number.NaN, Number.NaN]), 2)).toBeUndefined();
    expect(log.summary.read(new Float64Array([1, 1, T, 5]), 2)).toEqual({ buf: [T, T, T], head: 0, n: 3 });
    expect(log.summary.read(new Float64Array([1, 1, T, 2]), 2)).toEqual({ buf: [T, T], head: 0, n: 2 });
  });

  it("reset: 0 once nothing counts; a cost-0 check keeps the newest entry's reset", () => {
    expect(log.step(state([T]), T + 2000, 4, false)).toMatchObject({ allowed: false, retryAfterMs: INF, resetMs: 0 });
    expect(log.step(state([T]), T + 2000, 0, false)).toMatchObject({ allowed: true, remaining: 3, resetMs: 0 });
    expect(log.step(state([T]), T + 500, 0, false)).toMatchObject({ allowed: true, remaining: 2, resetMs: 500 });
  });

  it("a denial waits for the entry whose expiry makes room, in a ring not grown to the limit", () => {
    const ten = slidingLog({ algorithm: "sliding-log", limit: 10, windowMs: W });
    const s = ten.create();
    for (let i = 0; i < 5; i++) ten.step(s, T + i, 1, true); // 8 slots, 5 used
    // 6 more need one of the 5 gone: the oldest, at T + 1000.
    expect(ten.step(s, T + 10, 6, false)).toMatchObject({ allowed: false, remaining: 5, retryAfterMs: 990 });
    expect(ten.step(s, T + 10, 8, false)).toMatchObject({ allowed: false, retryAfterMs: 992 });
  });

  it("refund without a receipt: a clock stepped back counts from the newest entry, not `now`", () => {
    // Newest T + 1000, clock back at T + 500: entries after T (newest − W) still count, so T stays.
    const s = state([T, T + 400, T + 1000]);
    log.refund(s, T + 500, 3);
    expect(entries(s)).toEqual([T]);
  });

  it("refund without a receipt stops at the oldest kept entry, not at one dropped before the head", () => {
    // T + 100 sits before the head (dropped when a lower limit trimmed the log, still recent).
    const s = state([T + 100, T + 200, T + 300]);
    s.head = 1;
    s.n = 2;
    log.refund(s, T + 400, 5);
    expect(s.n).toBe(0);
    expect(entries(s)).toEqual([]);
  });

  it("summary: a full ring buffer joins its newest entry, wherever the head is", () => {
    for (const head of [0, 1, 2]) {
      const cells = new Float64Array([Number.NaN, Number.NaN]);
      log.summary.join(cells, 0, state([T, T + 100, T + 200], head));
      expect([...cells]).toEqual([T + 200, 3]);
    }
  });
});

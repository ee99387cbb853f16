// MemoryStore's dense compact layout (issue 34, density): a bare fixed-window state in one word,
// exact or not at all (then summarised), a gcra/leaky-bucket one at its next whole ms, at real
// clock instants; and the store choosing the 16-byte layout while its rules fit it, widening
// once a rule that does not is flooded.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { type CompiledRule, compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import {
  decodeWord,
  denseRule,
  encodeWord,
  fitsCompact,
  pairRule,
  readState,
  writeState,
  writtenExactly,
} from "./dense-codec.ts";

const T0 = Date.UTC(2026, 11, 7, 9, 0, 0, 123);
const rule = (...specs: unknown[]): CompiledRule => compileRule(specs.map((s) => validateSpec(s) as AlgorithmSpec));
const roundTrip = (r: CompiledRule, record: unknown) => {
  const word = encodeWord(r, record);
  return word === undefined ? undefined : decodeWord(r, word);
};

describe("one word of state", () => {
  it("fixed window, aligned and first-hit: exact up to twice the limit, else nothing", () => {
    const FW = rule({ algorithm: "fixed-window", limit: 100, windowMs: 1000 });
    const W = Math.floor(T0 / 1000) * 1000;
    expect(denseRule(FW)).toBe(true);
    for (const c of [0, 1, 99, 100, 2 ** 18 - 1]) expect(roundTrip(FW, { w: W, c })).toEqual({ w: W, c });
    expect(roundTrip(FW, { w: W, c: 2 ** 18 })).toBeUndefined();
    expect(roundTrip(FW, { w: W, c: 1.5 })).toBeUndefined();
    expect(roundTrip(FW, { w: W + 0.5, c: 1 })).toBeUndefined(); // not a window start: never rounded
    const first = rule({ algorithm: "fixed-window", limit: 5, windowMs: 60_000, anchor: "first" });
    expect(roundTrip(first, { w: T0, c: 3 })).toEqual({ w: T0, c: 3 });
    expect(roundTrip(first, { w: -T0, c: 3 })).toEqual({ w: -T0, c: 3 });
    // Instants (first-hit) leave 9 bits for the count.
    expect(roundTrip(first, { w: T0, c: 511 })).toEqual({ w: T0, c: 511 });
    expect(roundTrip(first, { w: T0, c: 512 })).toBeUndefined();
  });

  it("gcra and leaky bucket: the arrival time in whole ms, a fraction rounded up, under any limit", () => {
    const G = rule({ algorithm: "gcra", limit: 7, periodMs: 1000 });
    const LB = rule({ algorithm: "leaky-bucket", capacity: 5, leakPerSecond: 3 });
    expect(denseRule(G)).toBe(true);
    expect(denseRule(LB)).toBe(true);
    expect(roundTrip(G, { ms: T0, ticks: 0, den: 7 })).toEqual({ ms: T0, ticks: 0, den: 7 });
    expect(roundTrip(G, { ms: T0, ticks: 3, den: 7 })).toEqual({ ms: T0 + 1, ticks: 0, den: 7 });
    expect(roundTrip(G, { ms: -T0, ticks: 6, den: 7 })).toEqual({ ms: -T0 + 1, ticks: 0, den: 7 });
    expect(roundTrip(LB, { ms: T0, ticks: 2, den: 3 })).toEqual({ ms: T0 + 1, ticks: 0, den: 3 });
    // Written under another interval (a limit change): read at the next ms too, never earlier.
    expect(roundTrip(G, { ms: T0, ticks: 1, den: 11 })).toEqual({ ms: T0 + 1, ticks: 0, den: 7 });
    // A fresh state's arrival time, or one past 2^53 ms, does not fit.
    expect(roundTrip(G, { ms: Number.NEGATIVE_INFINITY, ticks: 0, den: 7 })).toBeUndefined();
    expect(roundTrip(G, { ms: 2 ** 53, ticks: 0, den: 7 })).toBeUndefined();
  });

  it("sliding window: both counts under the window number, exact or not at all", () => {
    const SW = rule({ algorithm: "sliding-window", limit: 100, windowMs: 60_000 });
    const W = Math.floor(T0 / 60_000) * 60_000;
    expect(denseRule(SW)).toBe(true);
    // 1-minute windows leave 12 bits per count.
    for (const [p, c] of [
      [0, 0],
      [7, 3],
      [4095, 4095],
    ]) {
      expect(roundTrip(SW, { w: W, p, c })).toEqual({ w: W, p, c });
      expect(roundTrip(SW, { w: -W, p, c })).toEqual({ w: -W, p, c });
    }
    expect(roundTrip(SW, { w: W, p: 4096, c: 0 })).toBeUndefined();
    expect(roundTrip(SW, { w: W, p: 0, c: 4096 })).toBeUndefined();
    expect(roundTrip(SW, { w: W + 1, p: 0, c: 1 })).toBeUndefined();
  });

  it("token bucket: the instant it is full again, never more tokens at any instant", () => {
    const TB = rule({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 3 });
    expect(denseRule(TB)).toBe(true);
    const balance = (s: { b: number; t: number }, x: number) => Math.min(5000, s.b + Math.max(0, x - s.t) * 3);
    for (const b of [0, 1, 999.5, 2500, 5000]) {
      const back = roundTrip(TB, { b, t: T0 }) as { b: number; t: number };
      expect(back.b).toBe(0);
      for (const x of [T0 - 5000, T0 - 1, T0, T0 + 1, T0 + 700, T0 + 2000]) {
        expect(balance(back, x)).toBeLessThanOrEqual(balance({ b, t: T0 }, x));
        // From its own time on, the same balance (at epoch magnitudes the instants round to
        // ~2.4e-4 ms: a few of those of refill at most); before it (a clock behind), less.
        if (x >= T0) expect(balance(back, x)).toBeGreaterThan(balance({ b, t: T0 }, x) - 0.01);
      }
    }
    // A negative balance (a penalty) or a fresh bucket does not fit.
    expect(roundTrip(TB, { b: -3000, t: T0 })).toBeUndefined();
    expect(roundTrip(TB, { b: 5000, t: Number.NEGATIVE_INFINITY })).toBeUndefined();
  });

  it("token bucket: an empty bucket whose instant survives the round trip comes back as the same state", () => {
    // Nudged, it read back "full again" a hair later: a retry 1 ms later than the record's own
    // answer, from a decision that claims to be exact (restore-exact-compact.test.ts).
    const ONE = rule({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 });
    for (const t of [T0, 1_760_000_000_000, T0 + 0.5]) expect(roundTrip(ONE, { b: 0, t })).toEqual({ b: 0, t });
    const PAIR = rule(
      { algorithm: "sliding-window", limit: 1, windowMs: 1 },
      { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
    );
    const words = new Float64Array(2);
    const record = [
      { w: T0 - 123, p: 0, c: 1 },
      { b: 0, t: T0 },
    ];
    expect(writeState(PAIR, record, words, 0, 2)).toBe(true);
    expect(readState(PAIR, words, 0, 2)).toEqual(record);
    // A bucket with tokens left is read back empty earlier: nudged as before (never more tokens).
    const back = roundTrip(ONE, { b: 250, t: T0 }) as { b: number; t: number };
    expect(back.b).toBe(0);
    expect(back.t).toBeGreaterThan(T0 - 250);
  });

  it("no other state takes the dense layout", () => {
    expect(
      denseRule(
        rule({ algorithm: "gcra", limit: 7, periodMs: 1000 }, { algorithm: "gcra", limit: 70, periodMs: 60_000 }),
      ),
    ).toBe(false);
    expect(
      denseRule(
        rule(
          { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
          { algorithm: "fixed-window", limit: 50, windowMs: 60_000 },
        ),
      ),
    ).toBe(false);
  });
});

describe("the store's layout", () => {
  it("16-byte slots while its rules fit one word; 24-byte once a rule that does not is flooded (nothing escapes)", () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ maxKeys: 10, maxBytes: 65536, seed: 3 });
    const fw = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { clock, store });
    for (let i = 0; i < 50; i++) expect(fw.tryAcquire(`k${i}`).allowed).toBe(true);
    const dense = store.stats();
    expect(dense.compactKeys).toBeGreaterThan(0);
    expect(dense.compactBytes / dense.compactCapacity).toBe(16);
    const tb = createLimiter(
      [
        // A first-hit window does not pack into one word (packed-codec.ts): the pair takes two.
        { algorithm: "fixed-window", limit: 1, windowMs: 1_000_000, anchor: "first" },
        { algorithm: "token-bucket", capacity: 1, refillPerSecond: 0.001 },
      ],
      { clock, store },
    );
    for (let i = 0; i < 50; i++) expect(tb.tryAcquire(`t${i}`).allowed).toBe(true);
    const wide = store.stats();
    expect(wide.compactBytes / wide.compactCapacity).toBe(24);
    // Everything the dense tier held went to the summary: every key is still refused.
    for (let i = 0; i < 50; i++) expect(fw.tryAcquire(`k${i}`).allowed).toBe(false);
    for (let i = 0; i < 50; i++) expect(tb.tryAcquire(`t${i}`).allowed).toBe(false);
  });
});

describe("bare logs and leases in one word (issue 34: 16-byte slots, not 24)", () => {
  it("one entry exactly; more as their count at the newest, whole ms up: no entry read earlier", () => {
    for (const spec of [
      { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
      { algorithm: "concurrency", limit: 5, leaseMs: 60_000 },
    ]) {
      const L = rule(spec);
      expect(denseRule(L)).toBe(true);
      expect(roundTrip(L, { buf: [], head: 0, n: 0 })).toEqual({ buf: [], head: 0, n: 0 });
      expect(roundTrip(L, { buf: [T0 + 0.25], head: 0, n: 1 })).toEqual({ buf: [T0 + 0.25], head: 0, n: 1 });
      // A ring buffer read from its head: entries T0-900, T0-10, T0+0.5.
      const back = roundTrip(L, { buf: [T0 + 0.5, 0, T0 - 900, T0 - 10], head: 2, n: 3 }) as {
        buf: number[];
        n: number;
      };
      expect(back.n).toBe(3);
      expect(back.buf).toEqual([T0 + 1, T0 + 1, T0 + 1]);
      // Negative instants (never a real clock's) do not fit: summarised instead.
      expect(roundTrip(L, { buf: [-5, -1], head: 0, n: 2 })).toBeUndefined();
    }
  });
});

describe("the pair layout: a composite of two members, one word each", () => {
  const at = (r: CompiledRule, record: unknown) => {
    const words = new Float64Array(2);
    return writeState(r, record as never, words, 0, 2) ? readState(r, words, 0, 2) : undefined;
  };

  it("takes composites the exact 2-word layout cannot hold, each member as its dense word", () => {
    const P = rule(
      { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 },
      { algorithm: "gcra", limit: 20, periodMs: 3_600_000 },
    );
    expect(pairRule(P)).toBe(true);
    expect(fitsCompact(P)).toBe(true);
    const W = Math.floor(T0 / 3_600_000) * 3_600_000;
    const den = (
      at(P, [
        { w: W, c: 0 },
        { ms: T0, ticks: 0, den: 1 },
      ]) as [unknown, { den: number }]
    )[1].den;
    expect(
      at(P, [
        { w: W, c: 3 },
        { ms: T0, ticks: 0, den },
      ]),
    ).toEqual([
      { w: W, c: 3 },
      { ms: T0, ticks: 0, den },
    ]);
    // A fraction of a ms reads back at the next whole ms: later, never earlier.
    expect(
      at(P, [
        { w: W, c: 3 },
        { ms: T0, ticks: 1, den },
      ]),
    ).toEqual([
      { w: W, c: 3 },
      { ms: T0 + 1, ticks: 0, den },
    ]);
    // Three members, or a ban, are not pairs (the summary keeps them).
    expect(
      pairRule(
        rule(
          { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
          { algorithm: "fixed-window", limit: 20, windowMs: 2000 },
          { algorithm: "fixed-window", limit: 30, windowMs: 3000 },
        ),
      ),
    ).toBe(false);
  });

  it("a log member of many entries: every entry at the newest (its own bound, never earlier)", () => {
    const P = rule(
      { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
      { algorithm: "fixed-window", limit: 100, windowMs: 3_600_000 },
    );
    expect(pairRule(P)).toBe(true);
    const W = Math.floor(T0 / 3_600_000) * 3_600_000;
    const one = at(P, [
      { buf: [T0 + 0.5], head: 0, n: 1 },
      { w: W, c: 1 },
    ]);
    expect(one).toEqual([
      { buf: [T0 + 0.5], head: 0, n: 1 },
      { w: W, c: 1 },
    ]);
    const three = at(P, [
      { buf: [T0 - 500, T0 - 20, T0], head: 0, n: 3 },
      { w: W, c: 3 },
    ]) as [{ buf: number[]; n: number }, unknown];
    expect(three[0].n).toBe(3);
    expect(three[0].buf).toEqual([T0, T0, T0]);
    // A newest entry that is not a whole ms: read at the next whole ms (later, never earlier).
    const later = at(P, [
      { buf: [T0 - 500, T0 + 0.5], head: 0, n: 2 },
      { w: W, c: 2 },
    ]) as [{ buf: number[]; n: number }, unknown];
    expect(later[0].buf).toEqual([T0 + 1, T0 + 1]);
  });
});

describe("writtenExactly: whether a slot holds the state or a bound of it (decisions from a bound say `approximate`)", () => {
  const exactly = (r: CompiledRule, record: unknown, stateWords = 1) => {
    const words = new Float64Array(2);
    expect(writeState(r, record, words, 0, stateWords)).toBe(true);
    return writtenExactly(r, record, words, 0, stateWords);
  };
  it("the state itself: windows, whole-ms arrival times, an empty bucket, a log of at most one entry", () => {
    expect(exactly(rule({ algorithm: "fixed-window", limit: 5, windowMs: 1000 }), { w: T0 - 123, c: 3 })).toBe(true);
    expect(exactly(rule({ algorithm: "gcra", limit: 7, periodMs: 1000 }), { ms: T0, ticks: 0, den: 7 })).toBe(true);
    expect(exactly(rule({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 }), { b: 0, t: T0 })).toBe(true);
    const L = rule({ algorithm: "sliding-log", limit: 5, windowMs: 60_000 });
    // A ring buffer of one entry (not at index 0) is the same log as its one-entry read-back.
    expect(exactly(L, { buf: [0, T0 + 0.25, 0], head: 1, n: 1 })).toBe(true);
    expect(exactly(L, { buf: [], head: 0, n: 0 })).toBe(true);
  });
  it("a bound: a log of two or more entries, an arrival time with a fraction, a bucket with tokens left", () => {
    const L = rule({ algorithm: "sliding-log", limit: 5, windowMs: 60_000 });
    // Both entries at the same whole ms: the log itself, read back exactly.
    expect(exactly(L, { buf: [T0, T0], head: 0, n: 2 })).toBe(true);
    expect(exactly(L, { buf: [T0 - 10, T0], head: 0, n: 2 })).toBe(false);
    expect(exactly(rule({ algorithm: "gcra", limit: 7, periodMs: 1000 }), { ms: T0, ticks: 3, den: 7 })).toBe(false);
    expect(exactly(rule({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 3 }), { b: 2500, t: T0 })).toBe(
      false,
    );
    // A pair: one member's bound makes the slot a bound.
    const PAIR = rule(
      { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
      { algorithm: "gcra", limit: 7, periodMs: 1000 },
    );
    expect(
      exactly(
        PAIR,
        [
          { w: T0 - 123, c: 1 },
          { ms: T0, ticks: 0, den: 7 },
        ],
        2,
      ),
    ).toBe(true);
    expect(
      exactly(
        PAIR,
        [
          { w: T0 - 123, c: 1 },
          { ms: T0, ticks: 2, den: 7 },
        ],
        2,
      ),
    ).toBe(false);
  });
});

// MemoryStore's dense compact layout (issue 34, density): a bare fixed-window or gcra state in one
// word, exact or not at all (then summarised), at real clock instants; and the store choosing
// the 16-byte layout while its rules fit it, widening once a rule that does not is flooded.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { type CompiledRule, compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { decodeWord, denseRule, encodeWord } from "./dense-codec.ts";

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

  it("no other state takes the dense layout", () => {
    expect(denseRule(rule({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 1 }))).toBe(false);
    expect(denseRule(rule({ algorithm: "sliding-log", limit: 5, windowMs: 1000 }))).toBe(false);
    expect(denseRule(rule({ algorithm: "gcra", limit: 7, periodMs: 1000 }))).toBe(false);
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
    const tb = createLimiter({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 0.001 }, { clock, store });
    for (let i = 0; i < 50; i++) expect(tb.tryAcquire(`t${i}`).allowed).toBe(true);
    const wide = store.stats();
    expect(wide.compactBytes / wide.compactCapacity).toBe(24);
    // Everything the dense tier held went to the summary: every key is still refused.
    for (let i = 0; i < 50; i++) expect(fw.tryAcquire(`k${i}`).allowed).toBe(false);
    for (let i = 0; i < 50; i++) expect(tb.tryAcquire(`t${i}`).allowed).toBe(false);
  });
});

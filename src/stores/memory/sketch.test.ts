// The summary tier on its own, at fixed instants: layout and size, what a key reads back,
// when cells empty, folding and snapshots. Keys are given as fixed fingerprint pairs (h1, h2),
// so every run places them alike.
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import type { BanPolicy } from "../../core/ban.ts";
import { type CompiledRule, compileRule, type RuleRecord } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { cellSlots, DEPTH, Sketch, sketchBytes } from "./sketch.ts";

const T0 = Date.UTC(2026, 11, 1);
const rule = (specs: unknown[], ban?: BanPolicy): CompiledRule =>
  compileRule(
    specs.map((s) => validateSpec(s) as AlgorithmSpec),
    ban,
  );
const FW = rule([{ algorithm: "fixed-window", limit: 5, windowMs: 1000 }]);
/** A fixed-window record: window start and count. */
const fw = (w: number, c: number): RuleRecord => ({ w, c });
/** The permissive-first order the store passes: fewer counted admits more. */
const fewer = (a: RuleRecord, b: RuleRecord) => (a as { c: number }).c < (b as { c: number }).c;

describe("Sketch", () => {
  it("layout: slots per cell, width rounded up to a power of two, bytes", () => {
    expect(DEPTH).toBe(4);
    expect(cellSlots(FW)).toBe(3); // slot 0 + (window, count)
    const composite = rule(
      [
        { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
        { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 },
      ],
      { after: 2, withinMs: 1000, forMs: 5000 },
    );
    expect(cellSlots(composite)).toBe(1 + 5 + 1 + 3);
    expect(sketchBytes(FW, 8)).toBe(4 * 8 * 3 * 8);
    for (const [asked, width] of [
      [0, 1],
      [1, 1],
      [5, 8],
      [8, 8],
      [9, 16],
    ]) {
      const s = new Sketch(FW, asked as number);
      expect(s.width, `width ${asked}`).toBe(width);
      expect(s.bytes).toBe(sketchBytes(FW, width as number));
    }
  });

  it("a key added is present until its window ends, and reads back its count", () => {
    const s = new Sketch(FW, 16);
    expect(s.present(1, 2, T0)).toBe(false);
    s.add(1, 2, fw(T0, 3), T0);
    expect(s.freshAt).toBe(T0 + 1000);
    expect(s.present(1, 2, T0)).toBe(true);
    expect(s.present(1, 2, T0 + 999)).toBe(true);
    expect(s.earliestEmpty()).toBe(T0 + 1000);
    expect(s.present(1, 2, T0 + 1000)).toBe(false);
    expect(s.estimate(fw(T0, 1), [], true, T0, fewer)).toEqual(fw(T0, 4)); // its 3 plus its own 1
    expect(s.estimate(fw(T0, 1), [], false, T0, fewer)).toEqual(fw(T0, 1)); // nothing summarised counts
    expect(s.fill(T0)).toBe(4 / 64); // one cell per row
    expect(s.fill(T0 + 1000)).toBe(0);
  });

  it("a key's cell keeps the latest instant anything in it matters, whatever is joined later", () => {
    const s = new Sketch(FW, 1); // one cell per row: every key shares it
    s.add(1, 2, fw(T0 + 1000, 2), T0 + 1000);
    s.add(3, 4, fw(T0, 5), T0 + 1000); // an older window: counts no more, must not shorten the cell
    expect(s.present(1, 2, T0 + 1999)).toBe(true);
    expect(s.earliestEmpty()).toBe(T0 + 2000);
    expect(s.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0 + 1500, fewer)).toEqual(fw(T0 + 1000, 2));
  });

  it("reads back the most permissive row", () => {
    const s = new Sketch(FW, 4);
    // Width 4: row 0's column is h1 & 3, so keys (1, 2) and (1, 5) share it (and row 2); rows 1
    // and 3 differ (other strides). Each reads back its own count, not the shared 9.
    s.add(1, 2, fw(T0, 1), T0);
    s.add(1, 5, fw(T0, 8), T0);
    expect(s.present(1, 5, T0)).toBe(true); // present locates the key: estimate reads its rows
    expect(s.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0, fewer)).toEqual(fw(T0, 8));
    expect(s.present(1, 2, T0)).toBe(true);
    expect(s.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0, fewer)).toEqual(fw(T0, 1));
  });

  it("fold halves the width and joins cell j + width/2 into cell j by its maximum", () => {
    const s = new Sketch(FW, 2);
    // Column = h1 & mask (row 0): h1 = 0 and h1 = 1 sit in different columns at width 2.
    s.add(0, 0, fw(T0, 2), T0);
    s.add(1, 0, fw(T0, 3), T0);
    s.fold(T0);
    expect(s.width).toBe(1);
    expect(s.bytes).toBe(sketchBytes(FW, 1));
    expect(s.present(0, 0, T0)).toBe(true);
    expect(s.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0, fewer)).toEqual(fw(T0, 3));
    s.fold(T0); // width 1: nothing to fold
    expect(s.width).toBe(1);
  });

  it("fold drops cells that stopped mattering", () => {
    const s = new Sketch(FW, 2);
    s.add(0, 0, fw(T0, 2), T0);
    s.add(1, 0, fw(T0 + 1000, 3), T0 + 1000);
    s.fold(T0 + 1000); // the first key's window ended: only the second's count is kept
    expect(s.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0 + 1000, fewer)).toEqual(fw(T0 + 1000, 3));
  });

  it("snapshots: toBase64 and load round-trip; cells of another size are refused", () => {
    const s = new Sketch(FW, 4);
    s.add(1, 2, fw(T0, 3), T0);
    const saved = s.toBase64();
    const copy = new Sketch(FW, 4);
    expect(copy.load(saved)).toBe(true);
    expect(copy.freshAt).toBe(T0 + 1000);
    expect(copy.present(1, 2, T0)).toBe(true);
    expect(copy.estimate(fw(Number.NEGATIVE_INFINITY, 0), [], true, T0, fewer)).toEqual(fw(T0, 3));
    expect(new Sketch(FW, 8).load(saved)).toBe(false);
    // Extra records go into the copy written, not into the sketch.
    const withExtra = s.toBase64([[5, 6, fw(T0 + 1000, 4), { rate: [] }]], T0 + 1000);
    expect(s.freshAt).toBe(T0 + 1000);
    expect(s.present(5, 6, T0 + 1000)).toBe(false);
    const other = new Sketch(FW, 4);
    other.load(withExtra);
    expect(other.freshAt).toBe(T0 + 2000);
    expect(other.present(5, 6, T0 + 1000)).toBe(true);
  });
});

// The narrow summary layout (aligned fixed windows, window-cells.ts) through the Sketch API:
// conservative update never reads a key below its own count (seeded: SLUICE_SEED, printed),
// windows replace each other, tags never alias, snapshots round-trip and float cells convert.
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { type CompiledRule, compileRule, type RuleRecord } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { Sketch, sketchBytes } from "./sketch.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const W = 1000;
const T0 = Date.UTC(2026, 11, 1);
const rule = (spec: unknown): CompiledRule => compileRule([validateSpec(spec) as AlgorithmSpec]);
const FW = rule({ algorithm: "fixed-window", limit: 10, windowMs: W });
const fewer = (a: RuleRecord, b: RuleRecord) => (a as { c: number }).c < (b as { c: number }).c;
const none: RuleRecord = { w: Number.NEGATIVE_INFINITY, c: 0 };

/** What `sketch` reads back for (h1, h2) at `t` (nothing of its own on top). */
function read(sketch: Sketch, h1: number, h2: number, t: number): { w: number; c: number } {
  const present = sketch.present(h1, h2, t);
  return sketch.estimate(none, [], present, t, fewer) as { w: number; c: number };
}

/** xorshift32 from `seed`. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

describe(`narrow summary cells (seed ${SEED})`, () => {
  it("takes 4 bytes a cell, a sixth of the float cells", () => {
    expect(sketchBytes(FW, 8)).toBe(4 * 8 * 4);
    const first = rule({ algorithm: "fixed-window", limit: 10, windowMs: W, anchor: "first" });
    expect(sketchBytes(first, 8)).toBe(4 * 8 * 3 * 8);
    expect(new Sketch(FW, 8).bytes).toBe(sketchBytes(FW, 8));
  });

  it("conservative update: every key reads back at least its own count, folded or not, a never-seen key far less", () => {
    const next = random(SEED);
    const sketch = new Sketch(FW, 1024);
    const own = new Map<number, number>();
    // 2,000 keys, 1–3 units each, added in pieces (a key read back and pushed out again adds what it took since).
    for (let i = 0; i < 6000; i++) {
      const key = next() % 2000;
      const c = 1 + (next() % 3);
      own.set(key, (own.get(key) ?? 0) + c);
      sketch.add(key * 7919, key, { w: T0, c }, T0);
    }
    const check = () => {
      for (const [key, c] of own) {
        const r = read(sketch, key * 7919, key, T0 + 1);
        expect(r.w).toBe(T0);
        expect(r.c).toBeGreaterThanOrEqual(c);
      }
    };
    check();
    // 12,000 units in 4,096 cells: a count-min row reads ~12 a cell; conservative update far less.
    let high = 0;
    for (let k = 0; k < 1000; k++) if (read(sketch, 0x9e3779b1 ^ k, k + 5000, T0 + 1).c >= 10) high++;
    expect(high).toBeLessThan(10);
    sketch.fold(T0 + 1);
    check();
    sketch.shrink(333); // any width: each new cell takes the largest of the old cells it covers
    expect(sketch.width).toBe(333);
    check();
    // A later window replaces the counts: what the key took before no longer counts there.
    sketch.add(1 * 7919, 1, { w: T0 + W, c: 1 }, T0 + W);
    expect(read(sketch, 1 * 7919, 1, T0 + W)).toEqual({ w: T0 + W, c: 1 });
  });

  it("cells end with their window; cells thousands of windows old are emptied, never read as a later window", () => {
    const sketch = new Sketch(FW, 4);
    sketch.add(1, 2, { w: T0, c: 9 }, T0);
    expect(sketch.present(1, 2, T0 + W - 1)).toBe(true);
    expect(sketch.earliestEmpty()).toBe(T0 + W);
    expect(sketch.present(1, 2, T0 + W)).toBe(false);
    // 4,096 windows later the key's tag is its old one again: the old count must not come back.
    const later = T0 + 4096 * W;
    sketch.add(3, 4, { w: later, c: 1 }, later);
    expect(read(sketch, 1, 2, later).c).toBeLessThanOrEqual(1);
  });

  it("a snapshot round-trips; float cells of the same width (a snapshot from before) convert", () => {
    const sketch = new Sketch(FW, 16);
    sketch.add(5, 6, { w: T0, c: 4 }, T0);
    const copy = new Sketch(FW, 16);
    expect(copy.load(sketch.toBase64())).toBe(true);
    expect(read(copy, 5, 6, T0)).toEqual({ w: T0, c: 4 });
    expect(copy.freshAt).toBe(T0 + W);
    expect(new Sketch(FW, 8).load(sketch.toBase64())).toBe(false);
    // A float sketch of the same width: 3 float64 slots a cell (fresh-at, window, count).
    const cells = new Float64Array(4 * 16 * 3).fill(Number.NaN);
    for (let i = 0; i < cells.length; i += 3) cells.set([T0 + W, T0, 7], i);
    const old = new Sketch(FW, 16);
    expect(old.load(Buffer.from(cells.buffer).toString("base64"))).toBe(true);
    expect(read(old, 5, 6, T0)).toEqual({ w: T0, c: 7 });
    // Extra records reach the snapshot, not the sketch.
    const saved = sketch.toBase64([[5, 6, { w: T0, c: 2 }, { rate: [] }]], T0);
    expect(read(sketch, 5, 6, T0)).toEqual({ w: T0, c: 4 });
    const again = new Sketch(FW, 16);
    again.load(saved);
    expect(read(again, 5, 6, T0).c).toBeGreaterThanOrEqual(6);
  });
});

// The in-process summary filter on its own: no false negative while a generation matters, a
// rotation only once everything joined into the older generation is past, false positives
// within a bound at capacity, and a save/load round trip. Keys are fixed fingerprint pairs.
import { describe, expect, it } from "vitest";
import { SummaryFilter } from "./summary-filter.ts";

const BITS = 32 * 512; // 16,384 bits a generation: a capacity of 1,024 keys
const key = (i: number): [number, number] => [
  Math.imul(i, 0x9e3779b1) >>> 0,
  (Math.imul(i, 0x85ebca6b) & 0xffff0000) >>> 0,
];

describe("SummaryFilter", () => {
  it("holds every key joined while its generation matters; a key never joined mostly not", () => {
    const f = new SummaryFilter(BITS);
    const never = () => false;
    for (let i = 0; i < 3000; i++) f.add("a", 1, ...key(i), 100, never);
    for (let i = 0; i < 3000; i++) expect(f.mayHold(1, ...key(i))).toBe(true);
    // The same key under another table index is another key.
    let other = 0;
    for (let i = 0; i < 3000; i++) if (f.mayHold(2, ...key(i))) other++;
    expect(other).toBeLessThan(3000);
    expect(f.rotations).toBe(1); // the first rotation empties the never-used generation only
  });

  it("overfull within one window, splits its keys between both generations (fewer false positives than one overfull)", () => {
    // 3,072 keys, 3 times a generation's capacity, all mattering until the same instant (one
    // window): the current generation alone would take the last 2,048 (2.6% false positives in
    // all); split, each holds about 1,536 (1.9%). No false negative either way.
    const f = new SummaryFilter(BITS);
    const never = () => false;
    for (let i = 0; i < 3072; i++) f.add("a", 1, ...key(i), 100, never);
    for (let i = 0; i < 3072; i++) expect(f.mayHold(1, ...key(i))).toBe(true);
    let held = 0;
    for (let i = 100_000; i < 140_000; i++) if (f.mayHold(1, ...key(i))) held++;
    expect(held / 40_000).toBeLessThan(0.023);
    expect(f.errorBound).toBeLessThan(0.02);
    // A key mattering longer than the older generation's owner does goes to the current one only.
    const g = new SummaryFilter(BITS);
    for (let i = 0; i < 3072; i++) g.add("a", 1, ...key(i), 100 + i, never);
    expect(g.errorBound).toBeGreaterThan(0.025);
  });

  it("rotates only when everything joined into the older generation is past, then forgets it", () => {
    const f = new SummaryFilter(BITS);
    let now = 0;
    const past = (_owner: string, at: number) => !(at > now);
    // Fills gen 0 (1,024 joins: a key whose bits are all set already is not counted), rotates to gen 1.
    let a = 0;
    while (f.rotations === 0) f.add("a", 1, ...key(a++), 100, past);
    expect(a).toBeGreaterThanOrEqual(1024);
    for (let i = a; i < 2048 + 256; i++) f.add("b", 1, ...key(i), 200, past); // gen 0 (fresh at 100) matters: no rotation
    expect(f.rotations).toBe(1);
    expect(f.mayHold(1, ...key(0))).toBe(true);
    now = 100;
    for (let i = 2048 + 256; i < 2048 + 512; i++) f.add("b", 1, ...key(i), 200, past);
    expect(f.rotations).toBe(2);
    let kept = 0;
    for (let i = 0; i < a; i++) if (f.mayHold(1, ...key(i))) kept++;
    expect(kept).toBeLessThan(a / 2); // forgotten (what remains are false positives of the other generation)
    for (let i = a; i < 2048 + 512; i++) expect(f.mayHold(1, ...key(i))).toBe(true);
  });

  it("false positives at capacity stay near 0.24% and within errorBound", () => {
    const f = new SummaryFilter(BITS * 8);
    for (let i = 0; i < (BITS * 8) / 16; i++) f.add("a", 3, ...key(i), 100, () => false);
    let fp = 0;
    const tries = 100_000;
    for (let i = 1_000_000; i < 1_000_000 + tries; i++) if (f.mayHold(3, ...key(i))) fp++;
    expect(fp / tries).toBeLessThan(0.005);
    expect(f.errorBound).toBeGreaterThan(0.0015);
    expect(f.errorBound).toBeLessThan(0.005);
  });

  it("a saved filter loads into one of its size only, with its owners", () => {
    const f = new SummaryFilter(BITS);
    for (let i = 0; i < 100; i++) f.add("a", 1, ...key(i), 100, () => false);
    const saved = f.save(7, (o) => o);
    const g = new SummaryFilter(BITS);
    expect(g.load(saved, (o) => o)).toBe(true);
    for (let i = 0; i < 100; i++) expect(g.mayHold(1, ...key(i))).toBe(true);
    expect(g.joins).toBe(100);
    expect(new SummaryFilter(BITS * 2).load(saved, (o) => o)).toBe(false);
  });
});

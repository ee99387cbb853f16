// The memo must give exactly the hash's fingerprint, whatever it has seen before: after a hit,
// after starting over when full, for keys too long to keep, and for texts that are equal but
// distinct string objects. Seeded pseudo-random keys (replayable).
import { describe, expect, it } from "vitest";
import { fingerprint } from "./fingerprint.ts";
import { FingerprintCache, MAX_CACHED_LENGTH } from "./fingerprint-cache.ts";

/** A replayable sequence of keys over a small alphabet (many repeats), some longer than the memo keeps. */
function keys(seed: number, count: number): string[] {
  let x = seed >>> 0;
  const next = () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x >>> 8; // the low bits of this generator repeat quickly
  };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const long = next() % 10 === 0;
    const len = long ? MAX_CACHED_LENGTH + 1 + (next() % 8) : 1 + (next() % 4);
    let k = "";
    for (let c = 0; c < len; c++) k += String.fromCharCode(97 + (next() % 3));
    out.push(k);
  }
  return out;
}

describe("FingerprintCache", () => {
  it("always writes the hash's fingerprint (hits, restarts when full, long keys)", () => {
    const seed = 0x5eed;
    const memo = new FingerprintCache(seed, 16);
    const got = new Uint32Array(3);
    const want = new Uint32Array(3);
    let restarts = 0;
    let hits = 0;
    for (const key of keys(7, 5000)) {
      const before = memo.size;
      // A copy of the text, not the same object: the memo is keyed by text.
      const text = [...key].join("");
      memo.into(text, got);
      fingerprint(seed, key, want);
      expect([...got], key).toEqual([...want]);
      if (memo.size < before) restarts++;
      if (memo.size === before && key.length <= MAX_CACHED_LENGTH) hits++;
      expect(memo.size).toBeLessThanOrEqual(16);
    }
    // The test covers what it claims: the memo filled and started over, and hits happened.
    expect(restarts).toBeGreaterThan(0);
    expect(hits).toBeGreaterThan(1000);
  });

  it("keeps no key longer than MAX_CACHED_LENGTH", () => {
    const memo = new FingerprintCache(1, 4);
    memo.into("x".repeat(MAX_CACHED_LENGTH + 1), new Uint32Array(3));
    expect(memo.size).toBe(0);
    memo.into("x".repeat(MAX_CACHED_LENGTH), new Uint32Array(3));
    expect(memo.size).toBe(1);
  });

  it("keeps one seed's fingerprints (two stores with different seeds differ)", () => {
    const a = new Uint32Array(3);
    const b = new Uint32Array(3);
    new FingerprintCache(1, 4).into("user:1", a);
    new FingerprintCache(2, 4).into("user:1", b);
    expect([...a]).not.toEqual([...b]);
  });
});

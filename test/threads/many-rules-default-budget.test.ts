// The default budget with many rules allowed and few keys (attack F3, 2026-12-07). docs/threads.md
// gives the default `maxBytes` as 2,400 bytes per `maxKeys` (at most 24 MiB), never less than the
// least the options need, and that least as a formula; this checks `stats().bytes` against both
// over a seeded grid of maxKeys × maxRules × recordWords. Before, every rule's rows kept 64 cells
// whatever the budget (2 KB a rule allowed): maxKeys 1,000 with maxRules 300 took 2,524,592 bytes
// though narrower rows fit 2,400,000, and maxRules 500 took 3,843,792 (3,036,880 with rows of 16,
// the least there). Each rule's 16 overflow and 16 spent cells (4,548 bytes with their rows'
// bookkeeping) and a small maxKeys's fixed parts cannot shrink, so a floor remains: the formula.
import fc from "fast-check";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { H } from "../../src/stores/threads/layout.ts";
import { runs, SEED } from "../support/seed.ts";

const KEY_BUDGET_CAP = 24 * 2 ** 20;

/** The least bytes a store needs, as docs/threads.md ("Memory") states it (exact to 4 bytes: words are whole). */
function leastBytes(maxKeys: number, maxRules: number, recordWords: number, ruleBytes: number, width: number): number {
  const buckets = Math.max(16, Math.ceil(maxKeys / 3));
  const blocks = buckets + Math.max(256, buckets >> 4);
  return (
    67_736 +
    ruleBytes +
    (4_548 + 32 * width) * maxRules +
    528 * width * Math.min(maxRules, 4) +
    8 * buckets +
    (68 + 64 * recordWords) * blocks +
    16 * Math.max(256, Math.ceil(maxKeys / 2))
  );
}

/** The store's bytes and the width and rule bytes its header records. */
function measure(maxKeys: number, maxRules: number, recordWords: number) {
  const store = new SharedMemoryStore({ maxKeys, maxRules, recordWords, seed: 1 });
  const header = new Int32Array(store.handle.buffer, 0, 32);
  return {
    bytes: store.stats().bytes,
    width: header[H.summaryWidth] as number,
    ruleBytes: header[H.arenaBytes] as number,
  };
}

/** Every claim of the default budget for one combination. */
function checkBudget(maxKeys: number, maxRules: number, recordWords: number): void {
  const { bytes, width, ruleBytes } = measure(maxKeys, maxRules, recordWords);
  const keyBudget = Math.min(KEY_BUDGET_CAP, 2400 * maxKeys);
  const where = `maxKeys ${maxKeys}, maxRules ${maxRules}, recordWords ${recordWords}: ${bytes} bytes, width ${width}`;
  // The rule texts follow maxRules (256 bytes a rule, at least 65,536).
  expect(ruleBytes, where).toBe(Math.max(65_536, 256 * maxRules));
  // Within 2,400 a key, or exactly the least (the formula) and nothing past it.
  if (bytes > keyBudget) {
    expect(Math.abs(bytes - leastBytes(maxKeys, maxRules, recordWords, ruleBytes, width)), where).toBeLessThanOrEqual(
      4,
    );
  }
  if (maxRules > 64) {
    // Past the budget, rows no wider than an eighth of the store (or the narrowest, 16).
    if (bytes > keyBudget && width > 16) expect(32 * maxRules * width * 8, where).toBeLessThanOrEqual(bytes);
    // Wherever the narrowest rows fit the 2,400 a key, the store does.
    if (leastBytes(maxKeys, maxRules, recordWords, ruleBytes, 16) + 4 <= keyBudget) {
      expect(bytes, where).toBeLessThanOrEqual(keyBudget);
    }
  }
}

describe("SharedMemoryStore default budget with many rules allowed", () => {
  it("the attack's cells: maxKeys 1,000 / maxRules 300 and 500, maxKeys 2,000 / maxRules 1,000", () => {
    expect(measure(1000, 300, 6).bytes).toBeLessThanOrEqual(2_400_000);
    expect(measure(1000, 500, 6).bytes).toBe(3_036_880);
    expect(measure(2000, 1000, 6).bytes).toBeLessThanOrEqual(5_856_064);
    for (const [k, r] of [
      [1000, 300],
      [1000, 500],
      [2000, 1000],
      [4000, 1000],
      [4000, 100],
    ] as const) {
      checkBudget(k, r, 6);
    }
  });

  it(`within the documented default budget for every maxKeys × maxRules × recordWords (seed ${SEED})`, () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 500, max: 20_000 })),
        fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 65, max: 2000 })),
        fc.constantFrom(1, 2, 3, 6, 11, 24),
        (maxKeys, maxRules, recordWords) => checkBudget(maxKeys, maxRules, recordWords),
      ),
      { seed: SEED, numRuns: runs(60) },
    );
  });
});

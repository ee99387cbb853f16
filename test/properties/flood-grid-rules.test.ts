// The flood grid (bench/memory.mjs --sweep, issue 34), scaled to `maxKeys: 300` (a 720 KB
// budget): 40 rules flooded at once by one-shot keys, each fifth of the flood about what the
// compact tier holds (as the bench's 200 rules × 15,000 keys at maxKeys 10,000); returning
// keys' records (50 per rule) 7 × the `Map` tier; every algorithm, a restart midway in half the cells (flood-trace.ts).
// Seeded (SLUICE_SEED), printed.
import { describe, expect, it } from "vitest";
import { gridCell } from "./flood-trace.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SHAPE = { rules: 40, keys: 2_500, per: 1, returning: 50, fresh: 300, maxKeys: 300 };

/**
 * Not met yet (issue 34; measured with seed 34, 2026-12-07): sliding logs and leases keep
 * 24-byte slots (a log needs two words), so the compact tier holds a third fewer of their
 * returning keys: 27% of returning and 0.6% of brand-new keys' requests refused (the one-word
 * states: 0% and 0.4%; before they were one word, 15–66% of returning keys' requests; 15% for
 * logs while the compact tier had 4/5 of the budget, not 3/4). Ceilings here catch a regression;
 * the target is 1%.
 */
const KNOWN = {
  "sliding-log": { returning: 35, fresh: 2 },
  concurrency: { returning: 35, fresh: 2 },
};

describe(`40 rules flooded at once (seed ${SEED})`, () => {
  gridCell("rules", SHAPE, KNOWN, SEED, it, expect);
});

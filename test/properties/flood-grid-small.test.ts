// The flood grid (bench/memory.mjs --sweep, issue 34) at `maxKeys: 100` (a 240 KB budget): a
// one-shot flood of 300 × maxKeys (the bench's 3,000,000 keys at maxKeys 10,000), with twice as
// many returning keys as the `Map` tier holds, so they live in the compact tier between visits;
// every algorithm, a restart midway in half the cells (flood-trace.ts). Seeded (SLUICE_SEED), printed.
import { describe, expect, it } from "vitest";
import { gridCell } from "./flood-trace.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SHAPE = { rules: 1, keys: 30_000, per: 1, returning: 200, fresh: 2_000, maxKeys: 100 };

/**
 * Not met yet (issue 34; measured with seed 34, 2026-12-07): the returning keys, twice the `Map`
 * tier, are first pushed into the compact tier as new keys, and the 6,000 flood keys between two
 * visits push some of them on into the summary (6,250 slots of 24 bytes, 9,375 of 16), which
 * reads them back over-counted: 7.3–8.2% of their requests refused (the one-word states), 29%
 * (logs); 6.3% and 24% while the compact tier had 4/5 of the budget, not 3/4.
 * Ceilings here catch a regression; the target is 1%.
 */
const KNOWN = {
  "fixed-window": { returning: 10, fresh: 1 },
  "sliding-window": { returning: 10, fresh: 1 },
  "token-bucket": { returning: 10, fresh: 1 },
  gcra: { returning: 10, fresh: 1 },
  "leaky-bucket": { returning: 10, fresh: 1 },
  "sliding-log": { returning: 35, fresh: 2 },
  concurrency: { returning: 35, fresh: 2 },
};

describe(`maxKeys 100, a one-shot flood of 300 × maxKeys (seed ${SEED})`, () => {
  gridCell("small", SHAPE, KNOWN, SEED, it, expect);
});

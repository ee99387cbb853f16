// The flood grid (bench/memory.mjs --sweep, issue 34) at `maxKeys: 100` (a 240 KB budget): a
// one-shot flood of 300 × maxKeys (the bench's 3,000,000 keys at maxKeys 10,000), with twice as
// many returning keys as the `Map` tier holds, so they live in the compact tier between visits;
// every algorithm, a restart midway in half the cells (flood-trace.ts). Seeded (SLUICE_SEED), printed.
import { describe, expect, it } from "vitest";
import { gridCell } from "./flood-trace.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SHAPE = { rules: 1, keys: 30_000, per: 1, returning: 200, fresh: 2_000, maxKeys: 100 };

/**
 * Every cell ≤ 1% (seed 34, 2026-12-07; 7.3–8.2% of returning keys' requests refused for the
 * one-word states before, 29% for logs). Three causes, each fixed (issue 34): a returning key
 * demoted from the protected segment (more of them than it holds) was evicted as a new key, so
 * the compact tier did not protect it; a key read back from the summary was only ever
 * summarised again, and went back unprotected; logs took 24-byte slots (a third fewer keys).
 */
const KNOWN = {};

describe(`maxKeys 100, a one-shot flood of 300 × maxKeys (seed ${SEED})`, () => {
  gridCell("small", SHAPE, KNOWN, SEED, it, expect);
});

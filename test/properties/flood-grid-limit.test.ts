// The flood grid (bench/memory.mjs --sweep, issue 34), scaled to `maxKeys: 100` (a 240 KB
// budget): a flood of keys spending their whole limit, 60 × maxKeys wide (the bench's 600,000
// keys at maxKeys 10,000), every algorithm, a restart midway in half the cells (flood-trace.ts).
// Seeded (SLUICE_SEED), printed.
import { describe, expect, it } from "vitest";
import { gridCell } from "./flood-trace.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SHAPE = { rules: 1, keys: 6_000, per: 10, returning: 100, fresh: 1_000, maxKeys: 100 };

describe(`a whole-limit flood of 60 × maxKeys (seed ${SEED})`, () => {
  gridCell("whole-limit", SHAPE, {}, SEED, it, expect);
});

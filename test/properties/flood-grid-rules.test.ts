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
 * Every cell ≤ 1% (seed 34, 2026-12-07). Sliding logs and leases refused 10.3% of returning
 * keys' requests while they took 24-byte slots (27% when the compact tier had 4/5 of the
 * budget): their bare records now take 16 bytes, the count at the newest entry (issue 34).
 */
const KNOWN = {};

describe(`40 rules flooded at once (seed ${SEED})`, () => {
  gridCell("rules", SHAPE, KNOWN, SEED, it, expect);
});

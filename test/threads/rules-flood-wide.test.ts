// Wide records past the budget (issue 34): a store made for `recordWords: 24` where the rules need
// far fewer words (a sliding log of limit 10 needs 11 and a block's word, a fixed window 2 and
// one). While every record took 24 words, 12 rules flooded by keys spending their whole limit
// refused a fifth of the honest requests however the victims were chosen: the flood's keys come
// back more often than the honest ones, and the table held too few entries for both (at ten
// times this shape, 120,000 flood keys against 82,464 entries of 24 words in 24 MiB: 21.2% of
// returning requests refused). Records as wide as their rule hold them all.
// This is `rules-flood.test.ts` at three times its keys with the budget of ten times them scaled
// down (24 MiB × 3/10): before, 992 and 984 of 4,788 returning requests refused (20.7% sliding-log,
// 20.6% fixed-window); now 9 and 0, and never a key past its limit. (At twice its keys the rules'
// fixed parts take more of the smaller budget: 25.7% before, 1.5% after for the sliding log.)
// Differential: an uncapped MemoryStore fed the same trace says which requests were honest.
import { describe, expect, it } from "vitest";
import { runRulesFlood, SPECS } from "./rules-flood-trace.ts";

const SCALE = 3;
const SEED = 34;
const BYTES = Math.floor((24 * 2 ** 20 * SCALE) / 10);

describe("SharedMemoryStore: records as wide as their rule under 12 flooded rules (recordWords 24)", () => {
  for (const spec of SPECS) {
    it(`${spec.algorithm}: 12 rules × 3,000 whole-limit flood keys, maxKeys 6,000 in 7.2 MiB: ≤ 1% of honest requests refused, no escape`, () => {
      const { asked, refused, escapes, stats } = runRulesFlood(spec, SCALE, {
        maxKeys: 2000 * SCALE,
        seed: SEED,
        maxBytes: BYTES,
      });
      const seen = `seed ${SEED}: returning requests ${asked}, refused ${refused}, escapes ${escapes}, evicted ${stats.evicted}, overflowed ${stats.overflowed}, bytes ${stats.bytes}`;
      console.log(seen);
      expect(escapes, seen).toBe(0);
      expect(stats.bytes, seen).toBeLessThanOrEqual(BYTES);
      expect(refused / asked, seen).toBeLessThanOrEqual(0.01);
    });
  }
});

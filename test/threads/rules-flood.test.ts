// Wide records under many flooded rules (issue 34 "any number of rules"; the attack's finding 6):
// `recordWords: 24` (what a sliding log of limit 23 needs) buys few buckets of the budget past
// `maxKeys`, so a flood of 12 rules whose keys each spend their whole limit pushes many keys out
// of the table into the summary. The summary pool backed only four rules' cells, so the other
// rules' keys joined their rule's 16 overflow cells, which read returning keys back spent:
// 1.55–2.3% of returning requests refused (fixed-window; sliding-log 2.1%), 0 with recordWords 6.
// Now the pool takes a tenth of the budget past maxKeys (params.ts): 14 and 18 of 4,788 refused
// (0.3-0.4%), and never a key past its limit.
// Differential: an uncapped MemoryStore fed the same trace says which requests were honest.
import { describe, expect, it } from "vitest";
import { runRulesFlood, SPECS } from "./rules-flood-trace.ts";

describe("SharedMemoryStore: returning keys keep passing while 12 rules are flooded (recordWords 24)", () => {
  for (const spec of SPECS) {
    it(`${spec.algorithm}: 12 rules × 1,000 whole-limit flood keys, maxKeys 2,000: ≤ 1% of honest requests refused, no escape`, () => {
      const { asked, refused, escapes, stats } = runRulesFlood(spec, 1, { maxKeys: 2000, seed: 34 });
      const seen = `seed 34: returning requests ${asked}, refused ${refused}, escapes ${escapes}, evicted ${stats.evicted}, overflowed ${stats.overflowed}`;
      console.log(seen);
      expect(escapes, seen).toBe(0);
      // The flood pushed 12,000-21,000 keys out while every record took 24 words; records as wide
      // as their rule (3 and 12 words) hold nearly all of it now (evicted 0 and 1,056). Ten times
      // these keys still push a million out: test/threads/rules-flood-wide.test.ts.
      expect(refused / asked, seen).toBeLessThanOrEqual(0.01);
    });
  }
});

// The default budget holds whatever `maxRules` (issue 34: summaries for any number of rules within
// the budget). Every rule's rows are reserved as cell words; at the old default width (maxKeys / 16,
// up to 1,024) maxKeys 4,000 with maxRules 1,000 needed 13.9 MB against a 9.6 MB budget, and 200
// rules at maxKeys 10,000 spent 6.5 of the 24 MB on cell words the pool never backed (the table's
// buckets lacked them: test/threads/many-rules-budget.test.ts).
import { describe, expect, it } from "vitest";
import { DEPTH, layoutOf } from "./layout.ts";
import { LEAST_WIDTH, paramsOf } from "./params.ts";

describe("paramsOf: the default width keeps every rule's cell words within the budget", () => {
  for (const maxKeys of [2000, 4000, 10_000, 100_000]) {
    for (const maxRules of [1, 64, 200, 500, 1000]) {
      it(`maxKeys ${maxKeys}, maxRules ${maxRules}`, () => {
        const p = paramsOf({ maxKeys, maxRules, recordWords: 3, seed: 34 });
        const budget = Math.min(24 * 2 ** 20, maxKeys * 2400);
        const cellBytes = 8 * maxRules * DEPTH * p.summaryWidth;
        // Only at the narrowest rows (16, where the least the store needs passes the budget) may
        // cell words pass an eighth.
        if (p.summaryWidth > LEAST_WIDTH) expect(cellBytes).toBeLessThanOrEqual(budget / 8);
        // Within the budget wherever the narrowest rows fit it (past that, what maxKeys and maxRules
        // need at least: 100,000 keys, or 1,000 rules' overflow and spent cells at maxKeys 2,000).
        const narrowest = { maxKeys, maxRules, recordWords: 3, seed: 34, summaryWidth: LEAST_WIDTH };
        const least = layoutOf(paramsOf(narrowest)).bytes;
        if (least <= budget) expect(layoutOf(p).bytes).toBeLessThanOrEqual(budget);
        // Few rules keep the rows maxKeys / 16 gives (64..1024).
        if (maxRules <= 64)
          expect(p.summaryWidth).toBe(Math.min(1024, Math.max(64, 2 ** Math.ceil(Math.log2(maxKeys / 16)))));
      });
    }
  }
});

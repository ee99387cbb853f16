// Issue 34, many rules: the bench's 500 rules × 5,000 one-shot keys (bench/memory.mjs --sweep
// 'fixed-window:5000:1:500$') scaled down to `maxKeys: 300` (its default budget, 720 KB):
// 100 rules flooded at once, some 3 bytes of budget per (rule, key) record in one window as
// there, so the compact tier and the summary filter run out and the summaries are read. Each
// rule's summary gets 1/100 of theirs: in float cells (24 bytes each) every cell was full and
// any key read back was refused; narrow cells (window-cells.ts) keep each key near its count.
// Asserts no escape, the tiers within `maxBytes`, ≤ 1% of returning and brand-new keys' requests
// refused. Seeded (SLUICE_SEED), printed.
import { describe, expect, it } from "vitest";
import { runFlood } from "./flood-trace.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SHAPE = { rules: 100, keys: 700, per: 1, returning: 100, fresh: 1_500, maxKeys: 300 };

describe(`100 rules, the budget run out (seed ${SEED})`, () => {
  for (const restart of [false, true]) {
    it(`fixed-window${restart ? ", restart midway" : ""}`, () => {
      const spec = { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 } as const;
      const t = runFlood({ ...SHAPE, spec, restart, seed: SEED });
      const pct = (n: number, of: number) => (100 * n) / Math.max(1, of);
      console.log(
        `many rules fixed-window${restart ? " restart" : ""}: returning refused ${t.returningRefused}/${t.returning}, new ${t.freshRefused}/${t.fresh}, ${t.escapes} escapes, bound ${t.bound.toExponential(1)} (seed ${SEED})`,
      );
      expect(t.escapes).toBe(0);
      expect(t.withinBudget).toBe(true);
      expect(pct(t.returningRefused, t.returning)).toBeLessThanOrEqual(1);
      expect(pct(t.freshRefused, t.fresh)).toBeLessThanOrEqual(1);
    }, 60_000);
  }
});

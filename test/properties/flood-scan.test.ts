// Scan resistance of the exact tier (docs/semantics.md §10): returning keys, once seen twice,
// stay in the `Map` tier while 1,000,000 one-shot keys churn through it. Under a plain LRU every
// flood of 10,000 new keys pushes them out, and each comes back only through the compact tier
// (measured with the protected segment disabled: 4,292 of 5,000 returning requests came back from
// the compact tier, 708 were decided on the summary's estimate and 125 refused).
// Seeded stores and a manual clock: every run makes the same decisions.
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const HOUR = 3_600_000;
const RETURNING = 1_000;
const FLOOD = 1_000_000;
const ROUNDS = 5;

const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
  { algorithm: "gcra", limit: 10, periodMs: HOUR },
];

describe("a 1,000,000 one-shot-key flood against maxKeys 10,000", () => {
  for (const spec of SPECS) {
    it(`${spec.algorithm}: returning keys stay exact in the Map tier`, () => {
      const clock = new ManualClock(Date.UTC(2026, 11, 1) + 1);
      const store = new MemoryStore({ maxKeys: 10_000, seed: 14 });
      const limiter = createLimiter(spec, { clock, store });
      const ask = (key: string) => limiter.tryAcquire(key) as Decision;
      // Seen twice before the flood: the second use promotes them out of probation.
      for (let pass = 0; pass < 2; pass++)
        for (let g = 0; g < RETURNING; g++) expect(ask(`good${g}`).allowed).toBe(true);
      const promoted = store.stats().protectedKeys;
      let approximate = 0;
      let refused = 0;
      let flood = 0;
      for (let round = 0; round < ROUNDS; round++) {
        for (let f = 0; f < FLOOD / ROUNDS; f++) ask(`bot${flood++}`);
        clock.advance(1000);
        for (let g = 0; g < RETURNING; g++) {
          const d = ask(`good${g}`);
          if (d.approximate === true) approximate++;
          if (!d.allowed) refused++;
        }
      }
      const s = store.stats();
      console.log(
        `scan ${spec.algorithm}: protected ${promoted} before, ${s.protectedKeys} after; ${s.evicted} evicted; returning keys back from the compact tier ${s.compactHits}, approximate ${approximate}, refused ${refused}`,
      );
      expect(s.evicted).toBeGreaterThan(FLOOD - 10_000); // the flood went through the Map tier
      // No returning key was pushed out, so none had to come back from the compact tier.
      expect(s.compactHits).toBe(0);
      expect(approximate).toBe(0);
      expect(refused).toBe(0);
      expect(promoted).toBe(RETURNING);
      expect(s.keys).toBeLessThanOrEqual(10_000);
    }, 120_000);
  }
});

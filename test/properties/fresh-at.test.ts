// `freshAt` is the contract behind expiry: from that instant a key's state behaves exactly like
// a new key's, which is what lets the in-process store drop it and Redis expire it (the Lua
// twins set PEXPIRE from the same rule). Checked against every algorithm on random traces.
import fc from "fast-check";
import { algorithmFor } from "sluice";
import { describe, expect, it } from "vitest";
import { runs } from "../support/seed.ts";
import { specArb } from "./arbitraries.ts";

describe("freshAt", () => {
  it("from freshAt on, a stored state decides exactly like a fresh one", () => {
    fc.assert(
      fc.property(
        specArb(false),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 1, max: 4 }) }), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.integer({ min: 0, max: 5000 }),
        (spec, events, probeGap) => {
          const algorithm = algorithmFor(spec);
          const state = algorithm.create();
          let now = 1_000_000;
          for (const { gap, cost } of events) {
            now += gap;
            algorithm.step(state, now, cost, true);
          }
          const freshAt = algorithm.freshAt(state);
          const at = Math.max(now, Math.ceil(freshAt)) + probeGap;
          for (const cost of [1, 2, algorithm.limit]) {
            expect(algorithm.step(state, at, cost, false)).toEqual(algorithm.step(algorithm.create(), at, cost, false));
          }
          // And never later than the horizon the store's generations rely on.
          expect(freshAt).toBeLessThanOrEqual(now + algorithm.horizonMs + 1e-6);
        },
      ),
      { numRuns: runs(400) },
    );
  });
});

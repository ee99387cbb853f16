// A one-member composite (`[spec]`) answers with `parts`, and otherwise exactly as the bare spec
// would: the flags its store sets — `approximate` (read back from the capped store's summary)
// and `banned` — belong on the top-level Decision too. Found by an outside attack (2026-12-07,
// finding 7): on a capped MemoryStore `d.approximate` was never true for `[sliding-log]`, only
// `d.parts[0].approximate`, so a caller counting approximate refusals counted none.
// Differential: the same seeded trace on two identically seeded capped stores, one limiter
// given the spec, the other `[spec]`; every decision's top-level figures and flags must match.
import { createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const SEED = Number(process.env.SLUICE_SEED ?? 38_007);
const SPECS = [
  { algorithm: "sliding-log", limit: 3, windowMs: 10_000 },
  { algorithm: "fixed-window", limit: 3, windowMs: 10_000 },
  { algorithm: "gcra", limit: 3, periodMs: 10_000 },
  { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.3 },
] as const;

const top = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  approximate: d.approximate === true,
  banned: d.banned === true,
});

describe("a one-member composite carries its store's flags at the top", () => {
  for (const spec of SPECS) {
    it(`[${spec.algorithm}] matches the bare spec on a flooded capped store, with a ban`, () => {
      console.log(`seed ${SEED}`);
      let s = SEED;
      const rnd = () => {
        s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
        return s / 2_147_483_648;
      };
      const clock = new ManualClock(Date.UTC(2026, 11, 7, 12));
      const ban = { after: 2, withinMs: 5_000, forMs: 20_000 };
      const bare = createLimiter(spec, { clock, ban, store: new MemoryStore({ maxKeys: 20, seed: SEED }) });
      const one = createLimiter([spec], { clock, ban, store: new MemoryStore({ maxKeys: 20, seed: SEED }) });
      let approximate = 0;
      let banned = 0;
      for (let i = 0; i < 6_000; i++) {
        clock.advance(Math.floor(rnd() * 5));
        // Returning keys spend past their limit (denials feed the ban); one-shot keys flood.
        const key = rnd() < 0.3 ? `honest-${Math.floor(rnd() * 40)}` : `flood-${i}`;
        const a = bare.tryAcquire(key);
        const b = one.tryAcquire(key);
        expect(b.parts?.length).toBe(1);
        expect(top(b), `${key} at step ${i}`).toEqual(top(a));
        if (a.approximate) approximate++;
        if (a.banned) banned++;
      }
      // The trace must reach both flags, or the comparison proves nothing.
      expect(approximate).toBeGreaterThan(0);
      expect(banned).toBeGreaterThan(0);
    });
  }
});

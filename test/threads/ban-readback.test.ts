// Regression: a ban read back from the summary must not absorb the strikes that ban the key in
// an uncapped store. A key deciding "banned" on a ban other keys put in its cells (a ban end U)
// is refused; the uncapped store, where the key is merely over its limit, counts those refusals
// as strikes and bans it from then on for `forMs`. Before the fix the capped store took no
// strikes while the read-back ban ran (a running ban takes none), so past U it admitted the key
// while the uncapped store still refused it. A read-back key's ban state now counts strikes as a
// chain, also while banned (core/ban.ts `countDenial`, read-back mode).
//
// The interleaving (one thread; the same trace replayed into an uncapped MemoryStore):
//   t=0     V takes its one unit of the window (both stores admit).
//   t=0     400 other keys each spend their unit and take 2 denials: banned until t=5000;
//           they push V and themselves out of a table of 128 entries, so every summary cell
//           of the rule holds a ban until 5000.
//   t=100   V (not in the table; the filter holds it) reads back its cells: banned until 5000,
//           approximate, a first strike of its chain. MemoryStore: over its limit, a first strike.
//   t=200   the same, a second strike: both stores ban V until 5200.
//   t=5100  both refuse V (before the fix the capped store admitted it: its ban ended at 5000).
// Found by test/threads/filter-fuzz.test.ts (seeds with a ban); it does not depend on the
// summary filter (it failed the same with the filter answering "may hold" for every key).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const SPEC = { algorithm: "fixed-window", limit: 1, windowMs: 1000 } as const;
const BAN = { after: 2, withinMs: 1000, forMs: 5000 };
const T0 = 1_800_000_000_000;

// The capped MemoryStore's summary reads bans back the same way: the same trace through
// `MemoryStore({ maxKeys: 16, seed: 1 })` admitted V at t=5100 too (its last case below).
const SHARED = [
  "SharedMemoryStore({ maxKeys: 1 })",
  (seed: number) => new SharedMemoryStore({ maxKeys: 1, seed }),
] as const;
const MEMORY = ["MemoryStore({ maxKeys: 16 })", (seed: number) => new MemoryStore({ maxKeys: 16, seed })] as const;
const CASES = [...[1, 2, 3].map((seed) => [SHARED, seed] as const), [MEMORY, 1] as const];

describe("a ban read back from the summary", () => {
  for (const [[name, make], seed] of CASES) {
    it(`never lets a key through that the uncapped store has banned: ${name} (seed ${seed})`, () => {
      const clock = new ManualClock(T0);
      const capped = createLimiter(SPEC, { store: make(seed), clock, name: "api", ban: BAN });
      const exact = createLimiter(SPEC, { store: new MemoryStore(), clock, name: "api", ban: BAN });
      const both = (key: string) => [capped.tryAcquire(key), exact.tryAcquire(key)] as const;
      both("V");
      for (let i = 0; i < 400; i++) for (let j = 0; j < 3; j++) both(`x${i}`);
      clock.set(T0 + 100);
      const [readBack] = both("V");
      // The premise: V decided on a ban other keys left in its cells.
      expect(readBack).toMatchObject({ allowed: false, banned: true, approximate: true });
      clock.set(T0 + 200);
      both("V");
      clock.set(T0 + 5100);
      const [a, b] = both("V");
      expect(b.allowed, `seed ${seed}`).toBe(false);
      expect(a.allowed, `seed ${seed}: admitted by the capped store, refused by MemoryStore`).toBe(false);
    });
  }
});

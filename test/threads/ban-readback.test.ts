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
      // MemoryStore's compact tier keeps a ban rule's record exactly while it has no strike, so V
      // is pushed out of it first, by keys that spend their unit and take no strike.
      if (make === MEMORY[1]) for (let i = 0; i < 6000; i++) both(`y${i}`);
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

// Why a chain and not the uncapped store's span counting: a read-back key is refused more often
// than uncapped (here once, at t=2010, on its cells' over-count), and span counting of that
// superset shifts the span's phase. With `after: 2, withinMs: 1000, forMs: 2000`:
//   uncapped: denials at 2600, 3100        → banned at 3100, until 5100.
//   capped:   denials at 2010, 2600, 3100  → span counting bans at 2600 (until 4600) and starts
//             a new span at 3100 (n = 1, no ban): at 5050 the window is new and it admits V
//             while the uncapped store refuses it. A chain (gaps 590, 500 < withinMs) is at 3
//             at 3100 and extends the ban to 5100.
// Both stores' cells hold the largest count joined (MemoryStore's summed them until its cells
// joined by maximum, 2026-12-08), so the other keys fill the window themselves (two checks each);
// V comes back after that.
describe("strikes of a key read back from the summary", () => {
  const WINDOW = { algorithm: "fixed-window", limit: 2, windowMs: 4000 } as const;
  const SHORT = { after: 2, withinMs: 1000, forMs: 2000 };
  for (const [[name, make], seed] of CASES) {
    it(`count as a chain, so extra refusals never end its ban early: ${name} (seed ${seed})`, () => {
      const clock = new ManualClock(T0);
      const capped = createLimiter(WINDOW, { store: make(seed), clock, name: "api", ban: SHORT });
      const exact = createLimiter(WINDOW, { store: new MemoryStore(), clock, name: "api", ban: SHORT });
      const at = (t: number, key: string) => {
        clock.set(T0 + t);
        const a = capped.tryAcquire(key);
        const b = exact.tryAcquire(key);
        expect(a.allowed && !b.allowed, `seed ${seed} t=${t}: admitted by the capped store only`).toBe(false);
        return [a, b] as const;
      };
      if (make === SHARED[1]) {
        // The thread store joins keys given up spent into cells of their own (summary.ts), read
        // only by keys its spent filter holds: V spends the window before and is pushed out
        // spent by keys spending theirs, so that at 2010 it reads back the cells the keys
        // spending their limit at 0 fill.
        at(-4000, "V");
        at(-4000, "V");
        for (let i = 0; i < 400; i++) for (let j = 0; j < 2; j++) at(-3000, `w${i}`);
      }
      at(0, "V");
      // Other keys fill the window and push V out: its cells are full.
      // Both stores' cells hold the largest count joined (MemoryStore's added up before its cells
      // joined by maximum): the other keys spend the window themselves.
      const checks = 2;
      for (let i = 0; i < 400; i++) for (let j = 0; j < checks; j++) at(0, `x${i}`);
      // A full bucket gives up spent keys first (room.ts): keys with room left, as V, push it out.
      if (make === SHARED[1]) for (let i = 0; i < 400; i++) at(0, `y${i}`);
      // MemoryStore's compact tier keeps records without a strike exactly: V (and the other keys)
      // are pushed out of it into the summary by more such keys.
      if (make === MEMORY[1]) for (let i = 0; i < 6000; i++) at(0, `y${i}`);
      const [first, exactFirst] = at(2010, "V");
      // The premise: V is refused on its cells' over-count (not banned) where the uncapped store admits it.
      expect(first).toMatchObject({ allowed: false, approximate: true });
      expect(first.banned).toBeUndefined();
      expect(exactFirst.allowed).toBe(true);
      at(2600, "V");
      const [, banned] = at(3100, "V");
      expect(banned).toMatchObject({ allowed: false, banned: true });
      // Past a ban struck at 2600 (4600), within the uncapped store's (5100), in a new window.
      const [late, exactLate] = at(5050, "V");
      expect(exactLate.allowed).toBe(false);
      expect(late.allowed, `seed ${seed}`).toBe(false);
      expect(at(5100, "V").map((d) => d.allowed)).toEqual([true, true]);
    });
  }
});

// The key's own strikes, pushed out with it, must come back with it: a summary cell keeps the
// strikes of every key joined into it while their spans run. With `after: 3`, V's two strikes
// (t=10, 20) and a third at t=40 ban it uncapped until 5040; other keys' later single strikes
// (t=30) joined into V's cells must add to V's, not replace them (the later span alone would
// read back one strike: V is struck a second time at t=40, not banned, and at t=2100, in a new
// window, admitted while the uncapped store refuses it).
describe("strikes a key took before it was pushed out", () => {
  const WINDOW = { algorithm: "fixed-window", limit: 1, windowMs: 2000 } as const;
  const THREE = { after: 3, withinMs: 1000, forMs: 5000 };
  for (const [[name, make], seed] of CASES) {
    it(`count when it is read back, whatever other keys join into its cells later: ${name} (seed ${seed})`, () => {
      const clock = new ManualClock(T0);
      const capped = createLimiter(WINDOW, { store: make(seed), clock, name: "api", ban: THREE });
      const exact = createLimiter(WINDOW, { store: new MemoryStore(), clock, name: "api", ban: THREE });
      const at = (t: number, key: string) => {
        clock.set(T0 + t);
        const a = capped.tryAcquire(key);
        const b = exact.tryAcquire(key);
        expect(a.allowed && !b.allowed, `seed ${seed} t=${t}: ${key} admitted by the capped store only`).toBe(false);
        return [a, b] as const;
      };
      at(0, "V");
      at(10, "V");
      at(20, "V");
      for (let i = 0; i < 400; i++) for (let j = 0; j < 2; j++) at(30, `x${i}`);
      const [readBack] = at(40, "V");
      expect(readBack).toMatchObject({ allowed: false, approximate: true });
      const [late, exactLate] = at(2100, "V");
      expect(exactLate).toMatchObject({ allowed: false, banned: true });
      expect(late.allowed, `seed ${seed}`).toBe(false);
    });
  }
});

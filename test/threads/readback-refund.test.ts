// Regression (issue 34, attack finding 6): a capped SharedMemoryStore read a key back from its
// summary as a plain record and kept it as the key's own. A sliding log reads back as its count
// of entries all at its newest instant (sliding-log.ts `summary`), so a refund by receipt of an
// older entry found nothing to give back, and the key's later refusals, where an uncapped store
// admits, claimed to be exact (no `approximate`), bans included.
//
// Differential oracle: the same seeded trace (honest keys checking, 30% of their admissions
// refunded by receipt, one-shot keys flooding them out of a tiny table) on a capped
// SharedMemoryStore and an uncapped MemoryStore. Every check the capped store refuses where the
// exact one admits must say `approximate: true` (SPEC §10).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";

const SPEC = { algorithm: "sliding-log", limit: 8, windowMs: 3000 } as const;
const BAN = { after: 4, withinMs: 1000, forMs: 3000 };
const T0 = 1_800_000_000_000;

describe("SharedMemoryStore: refusals from a record read back from the summary say approximate", () => {
  it("a seeded trace with refunds by receipt: no unflagged refusal where the uncapped store admits", () => {
    let wrong = 0;
    let premise = 0;
    const examples: string[] = [];
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      console.log(`readback-refund seed ${seed}`);
      const rnd = mulberry32(seed);
      const clock = new ManualClock(T0);
      const store = new SharedMemoryStore({ maxKeys: 1, seed, recordWords: 12 });
      const capped = createLimiter(SPEC, { clock, name: "r", ban: BAN, store });
      const exact = createLimiter(SPEC, { clock, name: "r", ban: BAN, store: new MemoryStore() });
      const held: [string, number, number][] = [];
      let flood = 0;
      for (let step = 0; step < 3000; step++) {
        clock.advance(Math.floor(rnd() * 40));
        const key = `honest-${Math.floor(rnd() * 6)}`;
        const d = capped.tryAcquire(key);
        const u = exact.tryAcquire(key);
        if (u.allowed && !d.allowed) {
          premise++;
          if (d.approximate !== true) {
            wrong++;
            if (examples.length < 3) examples.push(`seed ${seed} step ${step} ${key}: ${JSON.stringify(d)}`);
          }
        }
        if (d.allowed && u.allowed && rnd() < 0.3) held.push([key, d.at as number, u.at as number]);
        if (held.length > 0 && rnd() < 0.4) {
          const [k, at, exactAt] = held.splice(Math.floor(rnd() * held.length), 1)[0] as [string, number, number];
          capped.refund(k, { cost: 1, at });
          exact.refund(k, { cost: 1, at: exactAt });
        }
        // One-shot keys push the honest ones out of the table into the summary.
        const n = Math.floor(rnd() * 12);
        for (let i = 0; i < n; i++) {
          const k = `flood-${flood++}`;
          capped.tryAcquire(k);
          exact.tryAcquire(k);
        }
      }
      store.close();
    }
    console.log(`readback-refund: ${premise} refusals where the uncapped store admits, ${wrong} without approximate`);
    // The premise: the trace does reach refusals the exact store would not make.
    expect(premise).toBeGreaterThan(0);
    expect(wrong, examples.join("\n")).toBe(0);
  });
});

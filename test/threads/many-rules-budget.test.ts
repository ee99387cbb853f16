// A store allowed many rules (issue 34 "any number of rules ... within its budget"): every rule's
// summary rows are reserved as cell words (8 bytes each, whether or not a pool block ever backs
// them), maxRules × 4 rows × summaryWidth. At the old default width (maxKeys / 16, up to 1,024)
// `maxKeys: 4_000, maxRules: 1_000` needed 8 MB of them: the store took 13.9 MB against its
// 9.6 MB default budget, its table held 10,672 entries and its filters 4,000 keys, and 3 rules
// flooded by 12,000 one-request keys a round refused 56 of 1,000 honest and 31 of 500 brand-new
// requests. The default width now keeps the cell words within an eighth of the budget (params.ts
// `defaultWidth`): 9.6 MB, 56,840 entries, 0 refused. (200 rules at maxKeys 10,000 took 6.5 MB
// of 24 for them; bench/threads-flood.mjs --sweep, docs/threads.md. The budget for every maxRules:
// src/stores/threads/params.test.ts.)
// Differential: an uncapped MemoryStore fed the same trace says which requests were honest.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const SEED = 34;

describe("SharedMemoryStore with many rules allowed: the budget holds and buys the table", () => {
  it("maxRules 1,000, 3 rules flooded by 12,000 one-request keys a round: ≤ 1% honest and brand-new refused, no escape", () => {
    const RULES = 3;
    const spec = { algorithm: "gcra", limit: 10, periodMs: 60_000 } as const;
    const clock = new ManualClock(1_800_000_000_000);
    const shared = new SharedMemoryStore({ maxKeys: 4000, maxRules: 1000, recordWords: 3, seed: SEED });
    const exact = new MemoryStore();
    const capped = Array.from({ length: RULES }, (_, r) =>
      createLimiter(spec, { store: shared, clock, name: `r${r}` }),
    );
    const oracle = Array.from({ length: RULES }, (_, r) => createLimiter(spec, { store: exact, clock, name: `r${r}` }));
    let escapes = 0;
    /** One request through every rule: whether the capped store admitted it, or undefined when the uncapped one refused it. */
    const through = (key: string): boolean | undefined => {
      let ok = true;
      let honest = true;
      for (let r = 0; r < RULES; r++) {
        const c = capped[r]?.tryAcquire(key).allowed === true;
        const u = oracle[r]?.tryAcquire(key).allowed === true;
        if (c && !u) escapes++;
        if (!u) honest = false;
        if (!c) ok = false;
      }
      return honest ? ok : undefined;
    };
    const honest = { asked: 0, refused: 0 };
    const fresh = { asked: 0, refused: 0 };
    const count = (tally: { asked: number; refused: number }, ok: boolean | undefined) => {
      if (ok === undefined) return;
      tally.asked++;
      if (!ok) tally.refused++;
    };
    let next = 0;
    for (let round = 0; round < 5; round++) {
      for (let g = 0; g < 200; g++) {
        clock.advance(1);
        count(honest, through(`good${g}`));
      }
      for (let f = 0; f < 100; f++) count(fresh, through(`fresh${round}:${f}`));
      // One request per flood key, within every limit: the uncapped store admits each, and the
      // capped one can admit no more than that, so only the capped store sees the flood.
      for (let f = 0; f < 12_000; f++) {
        const key = `flood${next++}`;
        for (const limiter of capped) limiter.tryAcquire(key);
      }
    }
    const stats = shared.stats();
    shared.close();
    const seen = `seed ${SEED}: honest ${honest.refused}/${honest.asked}, brand-new ${fresh.refused}/${fresh.asked}, escapes ${escapes}, evicted ${stats.evicted}, bytes ${stats.bytes}`;
    console.log(seen);
    expect(escapes, seen).toBe(0);
    expect(stats.evicted, seen).toBeGreaterThan(50_000); // the flood did push keys out
    expect(honest.refused / honest.asked, seen).toBeLessThanOrEqual(0.01);
    expect(fresh.refused / fresh.asked, seen).toBeLessThanOrEqual(0.01);
  });
});

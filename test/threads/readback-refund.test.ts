// Regression (issue 34, attack finding 6): a capped SharedMemoryStore read a key back from its
// summary as a plain record and kept it as the key's own. A sliding log reads back as its count
// of entries all at its newest instant (sliding-log.ts `summary`), so a refund by receipt of an
// older entry found nothing to give back, and the key's later refusals, where an uncapped store
// admits, claimed to be exact (no `approximate`), bans included. Rules with a ban kept a mark in
// their ban state; rules without one had no place for it (898 of 3,378 refusals unflagged on
// the sliding-log trace): the mark is now a bit of the key's entry (compact/shared-bucket.ts
// READ_BACK), for every rule.
//
// Oracle: a seeded trace (honest keys checking, 30% of their admissions refunded by receipt,
// one-shot keys flooding them out of a tiny table) on a capped SharedMemoryStore, and beside it
// an uncapped MemoryStore fed what the capped store decided: each admission the capped store
// made (and its refund), each refusal the key's own history explains. A refusal the shadow
// would admit rests on something other than the key's own history, a bound read back from the
// summary: it must say `approximate: true` (SPEC §10). (An uncapped store fed the same checks,
// the oracle this test had first, also counts refusals that are exact: once a read-back key is
// fresh again it decides on its own admissions, which the bound made fewer than the uncapped
// store's, so the two differ from then on; its figures are printed beside.) And the other way:
// once a read-back key's record is fresh, its decisions are exact again and must not claim to be
// approximate.
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { LEAST_BYTES } from "../../src/stores/threads/params.ts";

const BAN = { after: 4, withinMs: 1000, forMs: 3000 };
const T0 = 1_800_000_000_000;
const SEED = Number(process.env.SLUICE_SEED ?? 1);

/**
 * One algorithm of each kind, sized so the trace's honest keys reach their limits, with the
 * words its records take without a ban (a ban takes 3 more: threads/codec.ts).
 */
const SPECS: [string, AlgorithmSpec, number][] = [
  ["sliding-log", { algorithm: "sliding-log", limit: 8, windowMs: 3000 }, 9],
  ["fixed-window", { algorithm: "fixed-window", limit: 8, windowMs: 3000 }, 2],
  ["sliding-window", { algorithm: "sliding-window", limit: 8, windowMs: 3000 }, 3],
  ["token-bucket", { algorithm: "token-bucket", capacity: 8, refillPerSecond: 8 / 3 }, 2],
  ["gcra", { algorithm: "gcra", limit: 8, periodMs: 3000 }, 3],
  ["leaky-bucket", { algorithm: "leaky-bucket", capacity: 8, leakPerSecond: 8 / 3 }, 3],
  [
    "fixed-window + sliding-log",
    [
      { algorithm: "fixed-window", limit: 20, windowMs: 6000 },
      { algorithm: "sliding-log", limit: 8, windowMs: 3000 },
    ] as unknown as AlgorithmSpec,
    11,
  ],
];

/**
 * Counts, over `seeds` traces of `steps`, refusals the key's own history does not explain and
 * those not flagged (`premise`, `wrong`), admissions it would refuse (`escapes`), and, against
 * an uncapped store fed the same checks, refusals where it admits and those not flagged.
 */
function run(spec: AlgorithmSpec, ban: boolean, seeds: number[], steps: number) {
  let wrong = 0;
  let premise = 0;
  let escapes = 0;
  let sameTrace = 0;
  let sameTraceWrong = 0;
  const examples: string[] = [];
  for (const seed of seeds) {
    const rnd = mulberry32(seed);
    const clock = new ManualClock(T0);
    const store = new SharedMemoryStore({ maxKeys: 1, seed, recordWords: 24 });
    const options = { clock, name: "r", ...(ban ? { ban: BAN } : {}) };
    const capped = createLimiter(spec, { ...options, store });
    const exact = createLimiter(spec, { ...options, store: new MemoryStore() });
    const shadow = createLimiter(spec, { ...options, store: new MemoryStore() });
    const held: [string, number, number, number][] = [];
    let flood = 0;
    for (let step = 0; step < steps; step++) {
      clock.advance(Math.floor(rnd() * 40));
      const key = `honest-${Math.floor(rnd() * 6)}`;
      const d = capped.tryAcquire(key);
      const u = exact.tryAcquire(key);
      let s: Decision | undefined;
      if (d.allowed) {
        s = shadow.tryAcquire(key);
        if (!s.allowed) escapes++;
      } else if (shadow.peek(key).allowed) {
        premise++;
        if (d.approximate !== true) {
          wrong++;
          if (examples.length < 3) examples.push(`seed ${seed} step ${step} ${key}: ${JSON.stringify(d)}`);
        }
      } else shadow.tryAcquire(key); // refused by its own history too: a strike toward a ban
      if (u.allowed && !d.allowed) {
        sameTrace++;
        if (d.approximate !== true) sameTraceWrong++;
      }
      if (d.allowed && s?.allowed && rnd() < 0.3) held.push([key, d.at as number, s.at as number, u.at as number]);
      if (held.length > 0 && rnd() < 0.4) {
        const [k, at, shadowAt, exactAt] = held.splice(Math.floor(rnd() * held.length), 1)[0] as [
          string,
          number,
          number,
          number,
        ];
        capped.refund(k, { cost: 1, at });
        shadow.refund(k, { cost: 1, at: shadowAt });
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
  return { wrong, premise, escapes, sameTrace, sameTraceWrong, examples };
}

describe("SharedMemoryStore: refusals from a record read back from the summary say approximate", () => {
  it("a seeded trace with refunds by receipt, every algorithm, with and without a ban: no unflagged refusal its own history does not explain", () => {
    console.log(`readback-refund seed ${SEED} (SLUICE_SEED)`);
    let wrong = 0;
    let premise = 0;
    let escapes = 0;
    const examples: string[] = [];
    for (const [name, spec] of SPECS) {
      for (const ban of [false, true]) {
        // The sliding log (the attack's shape) over three traces, the others over one.
        const seeds = name === "sliding-log" ? [SEED, SEED + 1, SEED + 2] : [SEED];
        const r = run(spec, ban, seeds, 1000);
        console.log(
          `readback-refund ${name}${ban ? " + ban" : ""}: ${r.premise} refusals the key's own history does not explain, ` +
            `${r.wrong} without approximate; ${r.escapes} admissions it refuses; against the same trace uncapped: ` +
            `${r.sameTrace} refusals where it admits, ${r.sameTraceWrong} without approximate`,
        );
        wrong += r.wrong;
        premise += r.premise;
        escapes += r.escapes;
        examples.push(...r.examples.map((e) => `${name}${ban ? " + ban" : ""}: ${e}`));
      }
    }
    // The premise: the trace does reach refusals the exact store would not make.
    expect(premise).toBeGreaterThan(0);
    expect(wrong, examples.slice(0, 6).join("\n")).toBe(0);
    // And the capped store never admits what the key's own history refuses.
    expect(escapes).toBe(0);
  });

  it("a read-back key whose record is fresh again decides exactly (no approximate), with and without a ban", () => {
    for (const [name, spec, words] of SPECS) {
      for (const ban of [false, true]) {
        const clock = new ManualClock(T0);
        // No room past maxKeys (LEAST_BYTES), records exactly as wide as the store's (eight to a
        // bucket): a few hundred keys push V out.
        const recordWords = words + (ban ? 3 : 0);
        const store = new SharedMemoryStore({ maxKeys: 1, seed: SEED, recordWords, maxBytes: LEAST_BYTES });
        const limiter = createLimiter(spec, { clock, name: "r", store, ...(ban ? { ban: BAN } : {}) });
        const label = `${name}${ban ? " + ban" : ""}`;
        limiter.tryAcquire("V", 3);
        // Pushed out of the table into the summary, then read back: a bound, approximate.
        for (let i = 0; i < 300; i++) limiter.tryAcquire(`x${i}`, 2);
        clock.advance(10);
        expect(limiter.tryAcquire("V").approximate, `${label}: the premise (read back)`).toBe(true);
        // Still over-counted a moment later, from its own entry now.
        clock.advance(10);
        expect(limiter.tryAcquire("V").approximate, `${label}: still a bound`).toBe(true);
        // Everything it held is fresh a window later (no other key touches its bucket's rule
        // meanwhile: its entry is the only one left): exact again, for good.
        clock.advance(60_000);
        const first = limiter.tryAcquire("V");
        expect(first.allowed, label).toBe(true);
        expect(first.approximate, `${label}: fresh again, exact`).toBeUndefined();
        clock.advance(10);
        expect(limiter.tryAcquire("V").approximate, `${label}: and after`).toBeUndefined();
        store.close();
      }
    }
  });
});

// The floods of docs/semantics.md §10 with a restart in the middle (issue 34: after a snapshot
// and restore past `maxKeys`, 62% of returning and 80% of new keys' requests were refused).
// Returning keys use 5 of 10; a flood of new keys, each spending its whole limit, goes
// through the store (a one-shot flood too); the store is saved and restored into a new one; then
// the returning keys use the rest of their limit, flood keys try again and brand-new keys send
// one request each. Against an uncapped store fed the same trace: ≤ 1% of honest requests
// refused, no key past its limit; and the restart refuses no more than the store without it.
// Every algorithm; a seeded hash (SLUICE_SEED), printed.
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const HOUR = 3_600_000;
const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
  { algorithm: "sliding-window", limit: 10, windowMs: HOUR },
  { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
  { algorithm: "gcra", limit: 10, periodMs: HOUR },
  { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 3600 },
  { algorithm: "sliding-log", limit: 10, windowMs: HOUR },
  { algorithm: "concurrency", limit: 10, leaseMs: HOUR },
];
const MAX_KEYS = 1_000;
const RETURNING = 500;
/** Flood keys per exact key: past the 20 of §10's 200,000 keys over `maxKeys: 10_000`. */
const FLOOD = 25 * MAX_KEYS;
const NEW = 3_000;

describe(`snapshot and restore past maxKeys ${MAX_KEYS} (seed ${SEED})`, () => {
  for (const spec of SPECS) {
    for (const per of [10, 1]) {
      it(`${spec.algorithm}, ${FLOOD} flood keys × ${per}: ≤ 1% honest refusals after the restart, none more than without it, no escape`, () => {
        const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
        const capped = new MemoryStore({ maxKeys: MAX_KEYS, seed: SEED });
        const make = (store?: MemoryStore) =>
          new RateLimiterService(store === undefined ? { clock } : { clock, store }).addRule("r", spec);
        const kept = make(capped);
        const free = make();
        const both = (key: string) => {
          kept.check("r", key);
          free.check("r", key);
        };
        for (let i = 0; i < RETURNING; i++) for (let j = 0; j < 5; j++) both(`user:${i}`);
        clock.advance(1000);
        for (let i = 0; i < FLOOD; i++) for (let j = 0; j < per; j++) both(`bot:${i}`);
        clock.advance(1000);
        const store = new MemoryStore({ maxKeys: MAX_KEYS });
        store.restore(capped.snapshot(clock.now()));
        const restarted = make(store);
        const report = store.restored();
        expect(report).toMatchObject({ summarised: 0, dropped: 0, waiting: 0 });
        const tally = { restarted: 0, kept: 0, escapes: 0, honest: 0 };
        const ask = (key: string) => {
          const want = (free.check("r", key) as Decision).allowed;
          const got = (restarted.check("r", key) as Decision).allowed;
          const without = (kept.check("r", key) as Decision).allowed;
          if (want) tally.honest++;
          if (want && !got) tally.restarted++;
          if (want && !without) tally.kept++;
          if (got && !want) tally.escapes++;
        };
        for (let i = 0; i < RETURNING; i++) for (let j = 0; j < 5; j++) ask(`user:${i}`);
        for (let i = 0; i < FLOOD; i += 10) ask(`bot:${i}`);
        for (let i = 0; i < NEW; i++) ask(`new:${i}`);
        console.log(
          `${spec.algorithm} × ${per}: ${report.exact} records restored exactly; honest requests refused ${tally.restarted} of ${tally.honest} after the restart, ${tally.kept} without it; ${tally.escapes} escapes (seed ${SEED})`,
        );
        expect(tally.escapes).toBe(0);
        expect(tally.restarted, "the restart refused more than the store without it").toBeLessThanOrEqual(tally.kept);
        expect(tally.restarted).toBeLessThanOrEqual(tally.honest / 100);
      });
    }
  }
});

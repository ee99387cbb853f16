// The limiter's fast lane (src/limiter.ts: `tryAcquire(key)` of one unit goes straight to the
// store's `checkOne`) against the general path, in lockstep: two MemoryStores with one seed, the
// same spec (every algorithm, with and without a ban), one ManualClock, and a random trace of
// one-unit checks, checks of other costs, peeks, refunds, blocks, penalties, resets, floods of
// new keys (the cap's tiers: eviction, the compact tier, the summary) and clock steps both ways.
// The general limiter has an `onDecision` hook, which keeps it off the lane; every answer (and
// its `at`) must be equal. Seeded: SLUICE_SEED replays a run.
import fc from "fast-check";
import {
  type AlgorithmSpec,
  createLimiter,
  type Decision,
  type Limiter,
  ManualClock,
  MemoryStore,
  type MemoryStoreOptions,
} from "sluice";
import { describe, expect, it } from "vitest";
import { specArb } from "./arbitraries.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 38_0038);
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);

type Op =
  | { op: "one" | "one-explicit" | "long" | "peek" | "refund" | "penalty" | "reset"; gap: number; key: number }
  | { op: "cost"; gap: number; key: number; cost: number }
  | { op: "block"; gap: number; key: number; ms: number }
  | { op: "flood"; n: number };

const gapArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 50 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 5000 }) },
  // A clock that steps back.
  { weight: 1, arbitrary: fc.integer({ min: -2000, max: -1 }) },
);
const keyArb = fc.integer({ min: 0, max: 5 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ op: fc.constant("one" as const), gap: gapArb, key: keyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("one-explicit" as const), gap: gapArb, key: keyArb }) },
  // Keys past maxKeyBytes / 3 units (may need hashing: the general path) and past maxKeyBytes (hashed).
  { weight: 1, arbitrary: fc.record({ op: fc.constant("long" as const), gap: gapArb, key: keyArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("cost" as const),
      gap: gapArb,
      key: keyArb,
      cost: fc.integer({ min: 2, max: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom("peek" as const, "refund" as const, "penalty" as const, "reset" as const),
      gap: gapArb,
      key: keyArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("block" as const),
      gap: gapArb,
      key: keyArb,
      ms: fc.integer({ min: 1, max: 3000 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("flood" as const), n: fc.integer({ min: 1, max: 40 }) }) },
);

const banArb = fc.option(
  fc.record({
    after: fc.integer({ min: 1, max: 3 }),
    withinMs: fc.integer({ min: 50, max: 5000 }),
    forMs: fc.integer({ min: 50, max: 5000 }),
  }),
  { nil: undefined, freq: 2 },
);

const storeArb: fc.Arbitrary<MemoryStoreOptions> = fc.oneof(
  fc.constant({}),
  fc.record({ maxKeys: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ maxKeys: fc.integer({ min: 1, max: 4 }), maxBytes: fc.constantFrom(4096, 16_384) }),
);

/** An answer as the caller sees it: its fields and its receipt `at` (not enumerated). */
const seen = (d: Decision | null) => (d === null ? null : { ...d, at: d.at });

/** Runs `call` on both limiters: equal answers, or the same error. */
function both(lane: Limiter, general: Limiter, call: (l: Limiter) => unknown): void {
  const run = (l: Limiter) => {
    try {
      return { value: call(l) };
    } catch (error) {
      return { error: String(error) };
    }
  };
  const a = run(lane);
  const b = run(general);
  const shown = (r: { value?: unknown; error?: string }) =>
    "error" in r ? r : { value: seen(r.value as Decision | null) };
  expect(shown(a)).toEqual(shown(b));
}

describe("the fast lane decides as the general path", () => {
  it(`every algorithm, bans, capped tiers, clock steps (seed ${SEED})`, () => {
    console.info(`fast-lane differential: seed ${SEED}, ${RUNS} runs (SLUICE_SEED to replay)`);
    let laneChecks = 0;
    fc.assert(
      fc.property(
        specArb(false),
        banArb,
        storeArb,
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.array(opArb, { minLength: 10, maxLength: 200, size: "large" }),
        (spec: AlgorithmSpec, ban, storeOptions, seed, ops) => {
          const clock = new ManualClock(1_700_000_000_000);
          const laneStore = new MemoryStore({ ...storeOptions, seed });
          const generalStore = new MemoryStore({ ...storeOptions, seed });
          // Counts the lane's calls, so the test knows it ran.
          const bind = laneStore.bind.bind(laneStore);
          laneStore.bind = (binding) => {
            const bound = bind(binding);
            const one = bound.checkOne;
            return one === undefined
              ? bound
              : {
                  ...bound,
                  checkOne: (key: string, now: number) => {
                    laneChecks++;
                    return one(key, now);
                  },
                };
          };
          const banned = ban === undefined ? {} : { ban };
          const lane = createLimiter(spec, { clock, store: laneStore, name: "l", ...banned });
          const general = createLimiter(spec, {
            clock,
            store: generalStore,
            name: "l",
            onDecision: () => {},
            ...banned,
          });
          let fresh = 0;
          for (const o of ops) {
            if (o.op === "flood") {
              for (let i = 0; i < o.n; i++) {
                const key = `flood:${fresh++}`;
                both(lane, general, (l) => l.tryAcquire(key));
              }
              continue;
            }
            clock.set(Math.max(0, clock.now() + o.gap));
            const key = `k${o.key}`;
            if (o.op === "one") both(lane, general, (l) => l.tryAcquire(key));
            else if (o.op === "one-explicit") both(lane, general, (l) => l.tryAcquire(key, 1));
            else if (o.op === "long") both(lane, general, (l) => l.tryAcquire(key.repeat(o.key % 2 === 0 ? 200 : 600)));
            else if (o.op === "cost") both(lane, general, (l) => l.tryAcquire(key, o.cost));
            else if (o.op === "peek") both(lane, general, (l) => l.peek(key));
            else if (o.op === "refund") both(lane, general, (l) => l.refund(key));
            else if (o.op === "penalty") both(lane, general, (l) => l.penalty(key));
            else if (o.op === "block") both(lane, general, (l) => l.block(key, o.ms));
            else both(lane, general, (l) => l.reset(key) ?? null);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    expect(laneChecks).toBeGreaterThan(RUNS);
  });
});

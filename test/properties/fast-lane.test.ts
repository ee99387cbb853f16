// The limiter's fast lane (src/limiter.ts: `tryAcquire(key)` of one unit goes straight to the
// store's `checkOne`) against the general path, in lockstep: two stores with one seed (two
// MemoryStores, or two SharedMemoryStores: roomy, or as small as they go, so floods push keys out
// into the summary and read them back approximate), the same spec (every algorithm, with and without a ban), one ManualClock, and a random trace of
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
  type Store,
} from "sluice";
import { SharedMemoryStore, type SharedMemoryStoreOptions } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { LEAST_BYTES } from "../../src/stores/threads/params.ts";
import { specArb } from "./arbitraries.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 38_0038);
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
// Fewer for SharedMemoryStore: each store takes ~1 MB that its thread keeps (its fleet queue seat).
const SHARED_RUNS = Number(process.env.FUZZ_RUNS ?? 60);

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

// Roomy (a run's keys all stay in the table) or capped (the table as small as `maxKeys` allows:
// keys pushed out to the summary, read back approximate, unplaced). 12 record words hold every
// spec of specArb with a word for blocks; 6 (the default) leaves some specs without one (a block
// is then refused, on both paths) or refuses the spec (the run is skipped).
const sharedArb: fc.Arbitrary<SharedMemoryStoreOptions> = fc
  .record({
    maxKeys: fc.oneof(fc.constant(400), fc.integer({ min: 1, max: 6 })),
    capped: fc.boolean(),
    recordWords: fc.constantFrom(12, 12, 6),
  })
  .map(({ maxKeys, capped, recordWords }) => ({ maxKeys, recordWords, ...(capped ? { maxBytes: LEAST_BYTES } : {}) }));

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

/** Counts the calls of the lane (`checkOne`) of the rules `store` binds, so the test knows it ran. */
function counting(store: Store, count: () => void): void {
  const bind = store.bind.bind(store);
  store.bind = (binding) => {
    const bound = bind(binding);
    const one = bound.checkOne;
    return one === undefined
      ? bound
      : {
          ...bound,
          checkOne: (key: string, now: number) => {
            count();
            return one(key, now);
          },
        };
  };
}

/**
 * The lockstep run: a lane limiter on `laneStore`, a general one (an `onDecision` hook keeps it
 * off the lane) on `generalStore`, the trace `ops` on both. False when the stores refuse the spec.
 */
function lockstep(
  spec: AlgorithmSpec,
  ban: { after: number; withinMs: number; forMs: number } | undefined,
  laneStore: Store,
  generalStore: Store,
  ops: Op[],
): boolean {
  const clock = new ManualClock(1_700_000_000_000);
  const banned = ban === undefined ? {} : { ban };
  let lane: Limiter;
  let general: Limiter;
  try {
    lane = createLimiter(spec, { clock, store: laneStore, name: "l", ...banned });
  } catch (error) {
    // A SharedMemoryStore whose records are too narrow for the spec: nothing to compare.
    expect(() => createLimiter(spec, { clock, store: generalStore, name: "l", ...banned })).toThrow(
      String((error as Error).message),
    );
    return false;
  }
  general = createLimiter(spec, { clock, store: generalStore, name: "l", onDecision: () => {}, ...banned });
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
  return true;
}

describe("the fast lane decides as the general path", () => {
  it(`MemoryStore: every algorithm, bans, capped tiers, clock steps (seed ${SEED})`, () => {
    console.info(`fast-lane differential: seed ${SEED}, ${RUNS} runs (SLUICE_SEED to replay)`);
    let laneChecks = 0;
    fc.assert(
      fc.property(
        specArb(false),
        banArb,
        storeArb,
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.array(opArb, { minLength: 10, maxLength: 200, size: "large" }),
        (spec: AlgorithmSpec, ban, storeOptions: MemoryStoreOptions, seed, ops) => {
          const laneStore = new MemoryStore({ ...storeOptions, seed });
          counting(laneStore, () => laneChecks++);
          lockstep(spec, ban, laneStore, new MemoryStore({ ...storeOptions, seed }), ops);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    expect(laneChecks).toBeGreaterThan(RUNS);
  });

  it(`SharedMemoryStore: every algorithm, bans, blocks, roomy and capped, clock steps (seed ${SEED})`, () => {
    console.info(`fast-lane differential (threads): seed ${SEED}, ${SHARED_RUNS} runs (SLUICE_SEED to replay)`);
    let laneChecks = 0;
    let approximate = 0;
    let compared = 0;
    fc.assert(
      fc.property(
        specArb(false),
        banArb,
        sharedArb,
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.array(opArb, { minLength: 10, maxLength: 200, size: "large" }),
        (spec: AlgorithmSpec, ban, storeOptions: SharedMemoryStoreOptions, seed, ops) => {
          const laneStore = new SharedMemoryStore({ ...storeOptions, seed });
          const generalStore = new SharedMemoryStore({ ...storeOptions, seed });
          counting(laneStore, () => laneChecks++);
          if (!lockstep(spec, ban, laneStore, generalStore, ops)) return;
          compared++;
          // The two stores went through the same states: their counters agree too.
          const { bytes: _a, ...a } = laneStore.stats();
          const { bytes: _b, ...b } = generalStore.stats();
          expect(a).toEqual(b);
          approximate += a.approximate;
          laneStore.close();
          generalStore.close();
        },
      ),
      { seed: SEED, numRuns: SHARED_RUNS },
    );
    expect(compared).toBeGreaterThan(SHARED_RUNS / 2);
    expect(laneChecks).toBeGreaterThan(SHARED_RUNS);
    // The capped stores read keys back from the summary (the lane's approximate answers are compared).
    expect(approximate).toBeGreaterThan(0);
  });
});

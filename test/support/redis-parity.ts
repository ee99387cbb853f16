/**
 * Parity traces: a seeded random timeline of checks, peeks and resets (times that mostly move
 * forward and sometimes step back, several keys, costs up to past the limit) run through a
 * memory-store limiter and a Redis-store limiter on one ManualClock. The TypeScript steps are
 * the oracle: every Decision must be deep-equal, field by field (±0 included).
 */
import { createLimiter, type Decision, ManualClock, MemoryStore, type RuleSpec, type Store } from "sluice";
import { expect } from "vitest";
import { mulberry32 } from "../../src/cli/compare/traces.ts";
import { pureStore } from "./redis-pure-store.ts";

/** The rules every parity run covers: each algorithm (with inexact quotients) and composites. */
export const PARITY_RULES: Array<{ name: string; spec: RuleSpec }> = [
  { name: "fixed-window", spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 } },
  { name: "sliding-log", spec: { algorithm: "sliding-log", limit: 4, windowMs: 700 } },
  { name: "sliding-window", spec: { algorithm: "sliding-window", limit: 7, windowMs: 900 } },
  { name: "token-bucket", spec: { algorithm: "token-bucket", capacity: 5, refillPerSecond: 3.3 } },
  { name: "token-bucket-slow", spec: { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.7 } },
  { name: "gcra", spec: { algorithm: "gcra", limit: 3, periodMs: 1000 } },
  { name: "gcra-burst", spec: { algorithm: "gcra", limit: 7, periodMs: 1300, burst: 2 } },
  { name: "leaky-bucket", spec: { algorithm: "leaky-bucket", capacity: 4, leakPerSecond: 3 } },
  { name: "seed-sliding", spec: { type: "sliding", limit: 2, windowMs: 1000 } },
  {
    name: "composite",
    spec: [
      { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2.5 },
      { algorithm: "sliding-log", limit: 6, windowMs: 2000 },
      { algorithm: "fixed-window", limit: 8, windowMs: 3000 },
    ],
  },
  {
    name: "composite-2",
    spec: [
      { algorithm: "gcra", limit: 5, periodMs: 1000, burst: 3 },
      { algorithm: "sliding-window", limit: 4, windowMs: 800 },
      { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 1.7 },
    ],
  },
];

/** mulberry32, the seeded PRNG the compare command uses: a failing trace replays from its seed. */
export const prng = mulberry32;

/** How a trace is run: the oracle store, and whether the clock may step back. */
export interface TraceOptions {
  /** The reference store (default a new MemoryStore). */
  oracle?: Store;
  /** Let the clock step backwards now and then (default false). */
  stepBack?: boolean;
}

/**
 * Runs one seeded trace of `events` events of `spec` through the oracle and the Redis store;
 * fails on the first difference. Returns how many decisions were compared.
 */
export async function runParityTrace(
  spec: RuleSpec,
  redis: Store,
  seed: number,
  events: number,
  options: TraceOptions = {},
): Promise<number> {
  const oracle = options.oracle ?? new MemoryStore();
  const random = prng(seed);
  const clock = new ManualClock(1_700_000_000_000 + Math.floor(random() * 1e6));
  const memory = createLimiter(spec, { clock, store: oracle });
  const remote = createLimiter(spec, { clock, store: redis });
  const keys = ["a", "b", "{c}"];
  const limit = Math.max(...remote.specs.map((s) => ("limit" in s ? s.limit : s.capacity)));
  let compared = 0;
  for (let i = 0; i < events; i++) {
    const r = random();
    // Mostly small forward steps (bursts), some long gaps, a few steps back, a few fractional.
    if (r < 0.35) clock.advance(0);
    else if (r < 0.8) clock.advance(Math.floor(random() * 300));
    else if (r < 0.9) clock.advance(Math.floor(random() * 3000));
    else if (r < 0.95) clock.set(clock.now() - (options.stepBack ? Math.floor(random() * 500) : 0));
    else clock.advance(random() * 50);
    const key = keys[Math.floor(random() * keys.length)] as string;
    const cost = random() < 0.75 ? 1 : 1 + Math.floor(random() * (limit + 1));
    const action = random();
    const where = `seed ${seed}, event ${i}, t=${clock.now()}, key ${key}, cost ${cost}`;
    if (action < 0.04) {
      memory.reset(key);
      await remote.reset(key);
      continue;
    }
    const peek = action < 0.18;
    const expected = (peek ? memory.peek(key, cost) : memory.tryAcquire(key, cost)) as Decision;
    const actual = await (peek ? remote.peek(key, cost) : remote.tryAcquire(key, cost));
    expect(actual, `${peek ? "peek" : "tryAcquire"} at ${where}`).toEqual(expected);
    compared++;
  }
  memory.close();
  remote.close();
  return compared;
}

/** Seeds per rule and oracle; modest so the suite stays fast (SLUICE_PARITY_SEEDS=60 searches deeper). */
export const PARITY_SEEDS = Number(process.env.SLUICE_PARITY_SEEDS ?? 3);
/** Events per trace. */
export const PARITY_EVENTS = 150;

/**
 * Runs every parity rule through `makeStore()` (a fresh prefix per trace), first against the
 * MemoryStore with time moving forward (fractional steps included), then against the plain
 * steps (see redis-pure-store.ts) with a clock that also steps back.
 */
export async function runParitySuite(spec: RuleSpec, name: string, makeStore: () => Store): Promise<number> {
  let compared = 0;
  for (let seed = 1; seed <= PARITY_SEEDS; seed++) {
    compared += await runParityTrace(spec, makeStore(), seed * 7919 + name.length, PARITY_EVENTS);
    compared += await runParityTrace(spec, makeStore(), seed * 104729 + name.length, PARITY_EVENTS, {
      oracle: pureStore(),
      stepBack: true,
    });
  }
  return compared;
}

/**
 * Runs `events` checks of several rules at once, all issued in one synchronous burst (the clock
 * moving forward between them), so the Redis store decides them in shared batches: several
 * rules per batch, mixed costs, peeks and times (non-uniform batches), runs of identical checks
 * (uniform batches) and more checks than one batch holds. Batches are decided in issue order,
 * so the decisions must equal the memory store's, made one after another. Returns the count.
 */
export async function runBatchedTrace(specs: RuleSpec[], redis: Store, seed: number, events: number): Promise<number> {
  const random = prng(seed);
  const clock = new ManualClock(1_700_000_000_000 + Math.floor(random() * 1e6));
  const oracle = new MemoryStore();
  const pairs = specs.map((spec, i) => ({
    memory: createLimiter(spec, { clock, store: oracle, name: `rule-${i}` }),
    remote: createLimiter(spec, { clock, store: redis, name: `rule-${i}` }),
  }));
  const keys = ["a", "b", "{c}", ""];
  const expected: Decision[] = [];
  const actual: Array<Promise<Decision>> = [];
  const labels: string[] = [];
  let uniformRun = 0;
  let pair = pairs[0] as (typeof pairs)[number];
  let key = "a";
  let cost = 1;
  let peek = false;
  for (let i = 0; i < events; i++) {
    if (uniformRun > 0) {
      uniformRun--; // the same rule, key, cost and time: a batch of identical checks
    } else {
      if (random() < 0.05) uniformRun = 10 + Math.floor(random() * 40);
      const r = random();
      if (r < 0.5) clock.advance(0);
      else if (r < 0.9) clock.advance(Math.floor(random() * 200));
      else clock.advance(random() * 30);
      pair = pairs[Math.floor(random() * pairs.length)] as (typeof pairs)[number];
      key = keys[Math.floor(random() * keys.length)] as string;
      cost = random() < 0.75 ? 1 : 1 + Math.floor(random() * 6);
      peek = random() < 0.15;
    }
    expected.push(peek ? (pair.memory.peek(key, cost) as Decision) : (pair.memory.tryAcquire(key, cost) as Decision));
    actual.push(Promise.resolve(peek ? pair.remote.peek(key, cost) : pair.remote.tryAcquire(key, cost)));
    labels.push(`seed ${seed}, event ${i}, t=${clock.now()}, rule ${pairs.indexOf(pair)}, key ${key}, cost ${cost}`);
  }
  const decided = await Promise.all(actual);
  decided.forEach((d, i) => {
    expect(d, labels[i]).toEqual(expected[i]);
  });
  for (const p of pairs) {
    p.memory.close();
    p.remote.close();
  }
  return decided.length;
}

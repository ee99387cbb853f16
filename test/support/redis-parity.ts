/**
 * Parity traces: a seeded random timeline of checks, peeks, refunds, resets and spec changes
 * (times that mostly move forward and sometimes step back, several keys, costs up to past the
 * limit) run through a reference-store limiter and a Redis-store limiter on one ManualClock.
 * The core's `decideRule` is the oracle: every Decision must be deep-equal, field by field.
 */
import {
  createLimiter,
  type Decision,
  type Limiter,
  ManualClock,
  MemoryStore,
  type RuleSpec,
  type Store,
} from "sluice";
import { expect } from "vitest";
import type { BanPolicy } from "../../src/ban.ts";
import { mulberry32 } from "../../src/cli/compare/traces.ts";
import { pureStore } from "./redis-pure-store.ts";

/**
 * A rule a parity run covers: its spec, an optional ban, and the specs the same limiter name
 * may be rebound to mid-trace (`respecs`: a new limit keeps the record; a new window, algorithm
 * or member list starts a fresh one, on every store alike).
 *
 * `bucketRespecs` keep the shape but change a token bucket's capacity or rate, which changes
 * when a record counts as fresh: the MemoryStore drops records some time after they become
 * fresh under the rule bound last (its generations), so whether a record that is full under
 * one capacity and not under another is still there depends on that timing. Those changes run
 * against the pure double only, which keeps every record, as Redis does within a trace.
 */
export interface ParityRule {
  name: string;
  spec: RuleSpec;
  ban?: BanPolicy;
  respecs?: RuleSpec[];
  bucketRespecs?: RuleSpec[];
}

/** The rules every parity run covers: each algorithm (with inexact quotients), composites, bans, spec changes. */
export const PARITY_RULES: ParityRule[] = [
  {
    name: "fixed-window",
    spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
    respecs: [
      { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
      { algorithm: "fixed-window", limit: 8, windowMs: 1000 },
      { algorithm: "fixed-window", limit: 5, windowMs: 700 },
    ],
  },
  {
    name: "sliding-log",
    spec: { algorithm: "sliding-log", limit: 4, windowMs: 700 },
    respecs: [
      { algorithm: "sliding-log", limit: 2, windowMs: 700 },
      { algorithm: "sliding-log", limit: 6, windowMs: 700 },
      { algorithm: "fixed-window", limit: 4, windowMs: 700 },
    ],
  },
  {
    name: "sliding-window",
    spec: { algorithm: "sliding-window", limit: 7, windowMs: 900 },
    respecs: [
      { algorithm: "sliding-window", limit: 4, windowMs: 900 },
      { algorithm: "sliding-window", limit: 7, windowMs: 1200 },
    ],
  },
  {
    name: "token-bucket",
    spec: { algorithm: "token-bucket", capacity: 5, refillPerSecond: 3.3 },
    respecs: [{ algorithm: "gcra", limit: 5, periodMs: 1500 }],
    bucketRespecs: [
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 3.3 },
      { algorithm: "token-bucket", capacity: 5, refillPerSecond: 1.9 },
    ],
  },
  { name: "token-bucket-slow", spec: { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.7 } },
  {
    name: "gcra",
    spec: { algorithm: "gcra", limit: 3, periodMs: 1000 },
    respecs: [
      { algorithm: "gcra", limit: 5, periodMs: 1000 },
      { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 3 },
    ],
  },
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
    respecs: [
      [
        { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2.5 },
        { algorithm: "sliding-log", limit: 9, windowMs: 2000 },
        { algorithm: "fixed-window", limit: 5, windowMs: 3000 },
      ],
      [
        { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2.5 },
        { algorithm: "sliding-log", limit: 6, windowMs: 2000 },
      ],
    ],
    bucketRespecs: [
      [
        { algorithm: "token-bucket", capacity: 2, refillPerSecond: 2.5 },
        { algorithm: "sliding-log", limit: 9, windowMs: 2000 },
        { algorithm: "fixed-window", limit: 5, windowMs: 3000 },
      ],
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
  {
    // Windows anchored at each key's first counted request: a new limit keeps the count; the
    // aligned variant and another window length are other shapes and start fresh.
    name: "fixed-window-first",
    spec: { algorithm: "fixed-window", limit: 4, windowMs: 900, anchor: "first" },
    respecs: [
      { algorithm: "fixed-window", limit: 2, windowMs: 900, anchor: "first" },
      { algorithm: "fixed-window", limit: 4, windowMs: 900 },
      { algorithm: "fixed-window", limit: 4, windowMs: 1300, anchor: "first" },
    ],
  },
  {
    name: "composite-first",
    spec: [
      { algorithm: "fixed-window", limit: 3, windowMs: 800, anchor: "first" },
      { algorithm: "fixed-window", limit: 6, windowMs: 2500, anchor: "first" },
      { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2.5 },
    ],
    ban: { after: 2, withinMs: 1500, forMs: 1100 },
  },
  {
    name: "ban-fixed-window",
    spec: { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
    ban: { after: 2, withinMs: 1500, forMs: 2500 },
    respecs: [
      { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      { algorithm: "fixed-window", limit: 3, windowMs: 600 },
    ],
  },
  {
    name: "ban-sliding-log",
    spec: { algorithm: "sliding-log", limit: 3, windowMs: 900 },
    ban: { after: 3, withinMs: 2000, forMs: 1200 },
  },
  {
    name: "ban-gcra",
    spec: { algorithm: "gcra", limit: 4, periodMs: 1000, burst: 2 },
    ban: { after: 1, withinMs: 500, forMs: 777 },
  },
  {
    name: "ban-composite",
    spec: [
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1.3 },
      { algorithm: "sliding-window", limit: 5, windowMs: 1100 },
      { algorithm: "leaky-bucket", capacity: 4, leakPerSecond: 2.2 },
    ],
    ban: { after: 2, withinMs: 3000, forMs: 1900 },
    respecs: [
      [
        { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1.3 },
        { algorithm: "sliding-window", limit: 3, windowMs: 1100 },
        { algorithm: "leaky-bucket", capacity: 4, leakPerSecond: 2.2 },
      ],
      [{ algorithm: "sliding-window", limit: 5, windowMs: 1100 }],
    ],
    bucketRespecs: [
      [
        { algorithm: "token-bucket", capacity: 5, refillPerSecond: 1.3 },
        { algorithm: "sliding-window", limit: 3, windowMs: 1100 },
        { algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 2.2 },
      ],
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
  /** The oracle keeps every record (the pure double): bucket capacity and rate changes are compared too. */
  keepsRecords?: boolean;
}

/** The two limiters of a trace: the oracle's and Redis's, bound to one spec under one name. */
interface Pair {
  memory: Limiter<Store>;
  remote: Limiter<Store>;
}

/** What a trace exercised: decisions compared, of them refunds and banned decisions, and spec changes. */
export interface TraceSummary {
  compared: number;
  refunded: number;
  banned: number;
  rebound: number;
}

/** Adds trace summaries. */
function add(a: TraceSummary, b: TraceSummary): TraceSummary {
  return {
    compared: a.compared + b.compared,
    refunded: a.refunded + b.refunded,
    banned: a.banned + b.banned,
    rebound: a.rebound + b.rebound,
  };
}

/**
 * Runs one seeded trace of `events` events of `rule` through the oracle and the Redis store;
 * fails on the first difference. Returns what it compared.
 *
 * Both limiters carry the rule's name, so a spec change binds new limiters to the same state
 * (as `updateRule`, a reload or a rolling deploy do). Earlier limiters stay open until the end,
 * as the old instances of a rolling deploy still run: the memory store then keeps every
 * shape's records, as Redis keeps them until they expire.
 */
export async function runParityTrace(
  rule: ParityRule,
  redis: Store,
  seed: number,
  events: number,
  options: TraceOptions = {},
): Promise<TraceSummary> {
  const oracle = options.oracle ?? new MemoryStore();
  const random = prng(seed);
  const clock = new ManualClock(1_700_000_000_000 + Math.floor(random() * 1e6));
  const name = `parity-${rule.name}`;
  const bind = (spec: RuleSpec): Pair => {
    const options = rule.ban === undefined ? { clock, name } : { clock, name, ban: rule.ban };
    return {
      memory: createLimiter(spec, { ...options, store: oracle }),
      remote: createLimiter(spec, { ...options, store: redis }),
    };
  };
  const pairs = [bind(rule.spec)];
  let pair = pairs[0] as Pair;
  let specIndex = 0;
  const keys = ["a", "b", "{c}"];
  const summary: TraceSummary = { compared: 0, refunded: 0, banned: 0, rebound: 0 };
  for (let i = 0; i < events; i++) {
    const r = random();
    // Mostly small forward steps (bursts), some long gaps, a few steps back, a few fractional.
    if (r < 0.35) clock.advance(0);
    else if (r < 0.8) clock.advance(Math.floor(random() * 300));
    else if (r < 0.9) clock.advance(Math.floor(random() * 3000));
    else if (r < 0.95) clock.set(clock.now() - (options.stepBack ? Math.floor(random() * 500) : 0));
    else clock.advance(random() * 50);
    const key = keys[Math.floor(random() * keys.length)] as string;
    const limit = Math.max(...pair.remote.specs.map((s) => ("limit" in s ? s.limit : s.capacity)));
    const cost = random() < 0.75 ? 1 : 1 + Math.floor(random() * (limit + 1));
    const action = random();
    const where = `seed ${seed}, event ${i}, t=${clock.now()}, spec #${specIndex}, key ${key}, cost ${cost}`;
    if (action < 0.04) {
      pair.memory.reset(key);
      await pair.remote.reset(key);
      continue;
    }
    const respecs = options.keepsRecords
      ? [...(rule.respecs ?? []), ...(rule.bucketRespecs ?? [])]
      : (rule.respecs ?? []);
    if (action < 0.06 && respecs.length > 0) {
      // The same name rebound to another spec (or back to the first): same or fresh state by shape.
      specIndex = Math.floor(random() * (respecs.length + 1));
      pair = bind(specIndex === 0 ? rule.spec : (respecs[specIndex - 1] as RuleSpec));
      pairs.push(pair);
      summary.rebound++;
      continue;
    }
    const op = action < 0.18 ? "peek" : action < 0.26 ? "refund" : "tryAcquire";
    const expected = pair.memory[op](key, cost) as Decision;
    const actual = await pair.remote[op](key, cost);
    expect(actual, `${op} at ${where}`).toEqual(expected);
    summary.compared++;
    if (op === "refund") summary.refunded++;
    if (actual.banned === true) summary.banned++;
  }
  for (const p of pairs) {
    p.memory.close();
    p.remote.close();
  }
  return summary;
}

/** Seeds per rule and oracle; modest so the suite stays fast (SLUICE_PARITY_SEEDS=60 searches deeper). */
export const PARITY_SEEDS = Number(process.env.SLUICE_PARITY_SEEDS ?? 3);
/** Events per trace. */
export const PARITY_EVENTS = 150;

/**
 * Runs a parity rule through `makeStore()` (a fresh prefix per trace), first against the
 * MemoryStore with time moving forward (fractional steps included), then against the plain
 * records of the pure double (see redis-pure-store.ts) with a clock that also steps back.
 */
export async function runParitySuite(rule: ParityRule, makeStore: () => Store): Promise<TraceSummary> {
  let summary: TraceSummary = { compared: 0, refunded: 0, banned: 0, rebound: 0 };
  for (let seed = 1; seed <= PARITY_SEEDS; seed++) {
    summary = add(summary, await runParityTrace(rule, makeStore(), seed * 7919 + rule.name.length, PARITY_EVENTS));
    summary = add(
      summary,
      await runParityTrace(rule, makeStore(), seed * 104729 + rule.name.length, PARITY_EVENTS, {
        oracle: pureStore(),
        stepBack: true,
        keepsRecords: true,
      }),
    );
  }
  return summary;
}

/**
 * Asserts a parity run exercised what its rule is there for: most events compared, refunds,
 * banned decisions exactly when the rule has a ban, spec changes exactly when it has respecs.
 */
export function expectExercised(rule: ParityRule, summary: TraceSummary): void {
  expect(summary.compared).toBeGreaterThan(PARITY_SEEDS * 2 * PARITY_EVENTS * 0.8);
  expect(summary.refunded).toBeGreaterThan(0);
  expect(summary.banned > 0, "banned decisions seen").toBe(rule.ban !== undefined);
  expect(summary.rebound > 0, "spec changes made").toBe((rule.respecs ?? []).length > 0);
}

/**
 * Runs `events` checks of several rules at once, all issued in one synchronous burst (the clock
 * moving forward between them), so the Redis store decides them in shared batches: several
 * rules per batch, bans, mixed costs, ops (checks, peeks, refunds) and times (non-uniform batches), runs of identical checks
 * (uniform batches) and more checks than one batch holds. Batches are decided in issue order,
 * so the decisions must equal the memory store's, made one after another. Returns the count.
 */
export async function runBatchedTrace(
  rules: ParityRule[],
  redis: Store,
  seed: number,
  events: number,
): Promise<number> {
  const random = prng(seed);
  const clock = new ManualClock(1_700_000_000_000 + Math.floor(random() * 1e6));
  const oracle = new MemoryStore();
  const pairs = rules.map(({ spec, ban }, i) => {
    const options = ban === undefined ? { clock, name: `rule-${i}` } : { clock, name: `rule-${i}`, ban };
    return {
      memory: createLimiter(spec, { ...options, store: oracle }),
      remote: createLimiter(spec, { ...options, store: redis }),
    };
  });
  const keys = ["a", "b", "{c}", ""];
  const expected: Decision[] = [];
  const actual: Array<Promise<Decision>> = [];
  const labels: string[] = [];
  let uniformRun = 0;
  let pair = pairs[0] as (typeof pairs)[number];
  let key = "a";
  let cost = 1;
  let op: "tryAcquire" | "peek" | "refund" = "tryAcquire";
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
      const o = random();
      op = o < 0.15 ? "peek" : o < 0.23 ? "refund" : "tryAcquire";
    }
    expected.push(pair.memory[op](key, cost) as Decision);
    actual.push(Promise.resolve(pair.remote[op](key, cost)));
    labels.push(
      `${op}: seed ${seed}, event ${i}, t=${clock.now()}, rule ${pairs.indexOf(pair)}, key ${key}, cost ${cost}`,
    );
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

/**
 * Parity traces: a seeded random timeline of checks, peeks, refunds, resets and spec changes
 * (times that mostly move forward and sometimes step back, several keys, costs up to past the
 * limit) run through a reference-store limiter and a Redis-store limiter on one ManualClock.
 * The core's `decideRule` is the oracle: every Decision must be deep-equal, field by field.
 */
import {
  type AlgorithmSpec,
  createLimiter,
  type Decision,
  type Limiter,
  ManualClock,
  MemoryStore,
  type RuleSpec,
  type Store,
} from "sluice";
import { expect } from "vitest";
import type { BanPolicy } from "../../src/core/ban.ts";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { RuleOracle } from "./oracle.ts";
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
  /**
   * Also compare every Redis decision with the independent reference model (test/support/oracle.ts),
   * which shares no code with src/: this checks the TypeScript that turns the Lua's replies into
   * Decisions, which the store-vs-store comparison shares. Needs whole-ms instants (no fractional
   * steps) and rules with exact quotients (MODEL_RULES).
   */
  model?: boolean;
}

/** The two limiters of a trace: the oracle's and Redis's, bound to one spec under one name. */
interface Pair {
  memory: Limiter<Store>;
  remote: Limiter<Store>;
  spec: RuleSpec;
}

/**
 * What a trace exercised: decisions compared (with the other store), of them those also compared
 * with the reference model, refunds, banned decisions, spec changes and boundary instants.
 */
export interface TraceSummary {
  compared: number;
  modelled: number;
  refunded: number;
  banned: number;
  rebound: number;
  boundaries: number;
}

const EMPTY: TraceSummary = { compared: 0, modelled: 0, refunded: 0, banned: 0, rebound: 0, boundaries: 0 };

/** Adds trace summaries. */
function add(a: TraceSummary, b: TraceSummary): TraceSummary {
  return {
    compared: a.compared + b.compared,
    modelled: a.modelled + b.modelled,
    refunded: a.refunded + b.refunded,
    banned: a.banned + b.banned,
    rebound: a.rebound + b.rebound,
    boundaries: a.boundaries + b.boundaries,
  };
}

/** The member specs of a rule spec, seed `type` specs read as their algorithms. */
function membersOf(spec: RuleSpec): AlgorithmSpec[] {
  return (Array.isArray(spec) ? spec : [spec]) as AlgorithmSpec[];
}

/**
 * The durations after which something changes under `rule` (windows, emission intervals,
 * refill times, the ban's span and length): from an earlier event's instant, where boundaries fall.
 */
export function boundaryDurations(rule: ParityRule): number[] {
  const out = new Set<number>();
  for (const spec of [rule.spec, ...(rule.respecs ?? []), ...(rule.bucketRespecs ?? [])]) {
    for (const s of membersOf(spec) as unknown as Array<Record<string, number | string | undefined>>) {
      const W = s.windowMs as number | undefined;
      if (W !== undefined) for (const d of [W, 2 * W]) out.add(d);
      let T: number | undefined;
      let n = 1;
      if (s.algorithm === "gcra") {
        T = (s.periodMs as number) / (s.limit as number);
        n = (s.burst ?? s.limit) as number;
      } else if (s.algorithm === "leaky-bucket") {
        T = 1000 / (s.leakPerSecond as number);
        n = s.capacity as number;
      } else if (s.algorithm === "token-bucket") {
        T = 1000 / (s.refillPerSecond as number);
        n = s.capacity as number;
      }
      if (T !== undefined)
        for (let k = 1; k <= n; k++) for (const d of [Math.floor(k * T), Math.ceil(k * T)]) out.add(d);
    }
  }
  if (rule.ban !== undefined) for (const d of [rule.ban.withinMs, rule.ban.forMs]) out.add(d);
  return [...out].filter((d) => d > 0).sort((a, b) => a - b);
}

/**
 * Runs one seeded trace of `events` events of `rule` through the oracle and the Redis store;
 * fails on the first difference. Returns what it compared.
 *
 * Operations are issued without waiting for Redis (the clock moving between them), so the
 * store decides them in batches, in issue order; the trace waits for what is in flight before
 * a reset or a spec change, and compares every decision once it arrives.
 *
 * Both limiters carry the rule's name, so a spec change binds new limiters to the same state
 * (as `updateRule`, a reload or a rolling deploy do). Earlier limiters stay open until the end,
 * as the old instances of a rolling deploy still run: the memory store then keeps every
 * shape's records, as Redis keeps them until they expire.
 *
 * Now and then the clock jumps to an earlier event's instant plus one of the rule's durations
 * (window, emission interval, ban span…), exactly or 1 ms either side: on the boundaries where
 * `<` and `<=` differ.
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
      spec,
    };
  };
  const pairs = [bind(rule.spec)];
  let pair = pairs[0] as Pair;
  let specIndex = 0;
  const keys = ["a", "b", "{c}"];
  // The reference model: per key, one model per state shape seen (records of each shape live on).
  const models = new Map<string, RuleOracle>();
  const model = (key: string): RuleOracle => {
    const fresh = new RuleOracle(pair.spec as AlgorithmSpec | AlgorithmSpec[], rule.ban);
    const id = `${key}\u0000${fresh.shape}`;
    const found = models.get(id);
    const current = found === undefined ? fresh : found.respec(pair.spec as AlgorithmSpec | AlgorithmSpec[], rule.ban);
    models.set(id, current);
    return current;
  };
  const spans = boundaryDurations(rule);
  const past: number[] = [clock.now()];
  const denials: number[] = [];
  const summary: TraceSummary = { ...EMPTY };
  const inFlight: Array<{ actual: Promise<Decision>; expected: Decision; modelled?: Decision; where: string }> = [];
  const settle = async () => {
    const batch = inFlight.splice(0);
    const decided = await Promise.all(batch.map((b) => b.actual));
    decided.forEach((actual, i) => {
      const { expected, modelled, where } = batch[i] as (typeof batch)[number];
      expect(actual, where).toEqual(expected);
      if (modelled !== undefined) {
        expect(actual, `${where} (vs the reference model)`).toEqual(modelled);
        summary.modelled++;
      }
      summary.compared++;
      if (where.startsWith("refund")) summary.refunded++;
      if (actual.banned === true) summary.banned++;
    });
  };
  for (let i = 0; i < events; i++) {
    const r = random();
    // Mostly small forward steps (bursts), some long gaps, a few steps back, a few fractional
    // (not under the model, which needs whole ms), and jumps onto boundaries.
    if (r < 0.3) clock.advance(0);
    else if (r < 0.65) clock.advance(Math.floor(random() * 300));
    else if (r < 0.73) clock.advance(Math.floor(random() * 3000));
    else if (r < 0.78) clock.set(clock.now() - (options.stepBack ? Math.floor(random() * 500) : 0));
    else if (r < 0.82 && !options.model) clock.advance(random() * 50);
    else if (spans.length > 0) {
      // From a recent denial half the time (where a ban's span starts), else any recent instant.
      const pool = denials.length > 0 && random() < 0.5 ? denials : past;
      const from = pool[pool.length - 1 - Math.floor(random() * Math.min(pool.length, 12))] as number;
      const to =
        from + (spans[Math.floor(random() * spans.length)] as number) + [-1, 0, 0, 1][Math.floor(random() * 4)]!;
      if (to >= clock.now() || options.stepBack) clock.set(to);
      summary.boundaries++;
    }
    past.push(clock.now());
    const key = keys[Math.floor(random() * keys.length)] as string;
    const limit = Math.max(...pair.remote.specs.map((s) => ("limit" in s ? s.limit : s.capacity)));
    const cost = random() < 0.7 ? 1 : 1 + Math.floor(random() * (limit + 1));
    const action = random();
    const where = `seed ${seed}, event ${i}, t=${clock.now()}, spec #${specIndex}, key ${key}, cost ${cost}`;
    if (action < 0.04) {
      await settle();
      pair.memory.reset(key);
      await pair.remote.reset(key);
      if (options.model)
        models.delete(`${key}\u0000${new RuleOracle(pair.spec as AlgorithmSpec | AlgorithmSpec[], rule.ban).shape}`);
      continue;
    }
    const respecs = options.keepsRecords
      ? [...(rule.respecs ?? []), ...(rule.bucketRespecs ?? [])]
      : (rule.respecs ?? []);
    if (action < 0.06 && respecs.length > 0) {
      // The same name rebound to another spec (or back to the first): same or fresh state by shape.
      await settle();
      specIndex = Math.floor(random() * (respecs.length + 1));
      pair = bind(specIndex === 0 ? rule.spec : (respecs[specIndex - 1] as RuleSpec));
      pairs.push(pair);
      summary.rebound++;
      continue;
    }
    const op = action < 0.075 ? "block" : action < 0.18 ? "peek" : action < 0.28 ? "refund" : "tryAcquire";
    // A block (on rules with a ban and without, src/core/block.ts) for 250 ms per unit of cost.
    const call = (l: Limiter) => (op === "block" ? l.block(key, 250 * cost) : l[op](key, cost));
    const expected = call(pair.memory) as Decision;
    const now = clock.now();
    if (op === "tryAcquire" && !expected.allowed) denials.push(now);
    const m = options.model ? model(key) : undefined;
    const modelled =
      m === undefined
        ? undefined
        : op === "block"
          ? m.block(now, 250 * cost)
          : op === "peek"
            ? m.peek(now, cost)
            : op === "refund"
              ? m.refund(now, cost)
              : m.check(now, cost);
    inFlight.push({
      actual: Promise.resolve(call(pair.remote)),
      expected,
      where: `${op} at ${where}`,
      ...(modelled ? { modelled } : {}),
    });
    // Bounded batches: a burst of up to 64 in flight.
    if (inFlight.length >= 64) await settle();
  }
  await settle();
  for (const p of pairs) {
    p.memory.close();
    p.remote.close();
  }
  return summary;
}

/**
 * Rules with exact quotients (whole-ms emission intervals, whole rates), for traces that also
 * compare Redis with the reference model: each algorithm, composites and bans, with limit changes.
 */
export const MODEL_RULES: ParityRule[] = [
  {
    name: "model-fixed-window",
    spec: { algorithm: "fixed-window", limit: 4, windowMs: 1000 },
    ban: { after: 2, withinMs: 1500, forMs: 2500 },
    respecs: [{ algorithm: "fixed-window", limit: 2, windowMs: 1000 }],
  },
  {
    name: "model-sliding-log",
    spec: { algorithm: "sliding-log", limit: 3, windowMs: 700 },
    respecs: [
      { algorithm: "sliding-log", limit: 5, windowMs: 700 },
      { algorithm: "sliding-log", limit: 1, windowMs: 700 },
    ],
  },
  {
    name: "model-sliding-log-ban",
    spec: { algorithm: "sliding-log", limit: 3, windowMs: 900 },
    ban: { after: 3, withinMs: 2000, forMs: 1200 },
  },
  {
    name: "model-sliding-window",
    spec: { algorithm: "sliding-window", limit: 5, windowMs: 800 },
    respecs: [{ algorithm: "sliding-window", limit: 3, windowMs: 800 }],
  },
  { name: "model-token-bucket", spec: { algorithm: "token-bucket", capacity: 4, refillPerSecond: 5 } },
  {
    name: "model-gcra",
    spec: { algorithm: "gcra", limit: 4, periodMs: 1000, burst: 3 },
    respecs: [{ algorithm: "gcra", limit: 5, periodMs: 1000 }],
    ban: { after: 1, withinMs: 500, forMs: 777 },
  },
  { name: "model-leaky-bucket", spec: { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 4 } },
  {
    name: "model-composite",
    spec: [
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 2 },
      { algorithm: "sliding-log", limit: 5, windowMs: 1500 },
      { algorithm: "fixed-window", limit: 6, windowMs: 2000 },
    ],
    ban: { after: 2, withinMs: 3000, forMs: 1900 },
    respecs: [
      [
        { algorithm: "token-bucket", capacity: 3, refillPerSecond: 2 },
        { algorithm: "sliding-log", limit: 3, windowMs: 1500 },
        { algorithm: "fixed-window", limit: 9, windowMs: 2000 },
      ],
    ],
  },
  {
    name: "model-composite-2",
    spec: [
      { algorithm: "gcra", limit: 5, periodMs: 1000, burst: 3 },
      { algorithm: "sliding-window", limit: 4, windowMs: 800 },
      { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 2 },
    ],
  },
];

/** Seeds per rule and oracle (SLUICE_PARITY_SEEDS=60 searches deeper). */
export const PARITY_SEEDS = Number(process.env.SLUICE_PARITY_SEEDS ?? 3);
/** Events per trace. */
export const PARITY_EVENTS = 150;

/**
 * Runs a parity rule through `makeStore()` (a fresh prefix per trace), first against the
 * MemoryStore with time moving forward (fractional steps included), then against the plain
 * records of the pure double (see redis-pure-store.ts) with a clock that also steps back.
 * With `model`, the second kind also checks every decision against the reference model.
 */
export async function runParitySuite(
  rule: ParityRule,
  makeStore: () => Store,
  seeds = PARITY_SEEDS,
  model = false,
): Promise<TraceSummary> {
  let summary: TraceSummary = { ...EMPTY };
  for (let seed = 1; seed <= seeds; seed++) {
    if (!model) {
      summary = add(summary, await runParityTrace(rule, makeStore(), seed * 7919 + rule.name.length, PARITY_EVENTS));
    }
    summary = add(
      summary,
      await runParityTrace(rule, makeStore(), seed * 104729 + rule.name.length, PARITY_EVENTS, {
        oracle: pureStore(),
        stepBack: true,
        keepsRecords: true,
        model,
      }),
    );
  }
  return summary;
}

/**
 * Asserts a parity run exercised what its rule is there for: most events compared, refunds,
 * banned decisions (bans, and blocks on every rule), spec changes exactly when it has respecs,
 * and instants aimed at boundaries.
 */
export function expectExercised(
  rule: ParityRule,
  summary: TraceSummary,
  seeds = PARITY_SEEDS,
  traces = 2,
  modelTraces = 0,
): void {
  expect(summary.compared).toBeGreaterThan(seeds * traces * PARITY_EVENTS * 0.75);
  // Seeded traces: the same count every run. Only the model traces compare with the model.
  if (modelTraces === 0) expect(summary.modelled, "decisions compared with the reference model").toBe(0);
  else
    expect(summary.modelled, "decisions compared with the reference model").toBeGreaterThan(
      seeds * modelTraces * PARITY_EVENTS * 0.75,
    );
  expect(summary.refunded).toBeGreaterThan(0);
  // Banned answers on every rule: blocks (src/core/block.ts) on rules with a ban and without.
  expect(summary.banned, "banned decisions seen").toBeGreaterThan(0);
  expect(summary.rebound > 0, "spec changes made").toBe((rule.respecs ?? []).length > 0);
  expect(summary.boundaries, "boundary instants").toBeGreaterThan(seeds * traces * PARITY_EVENTS * 0.05);
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

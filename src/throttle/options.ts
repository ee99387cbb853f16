/**
 * The throttle's options, checked where they enter: an unknown option names itself, a bad value
 * names its field and what arrived, so a typo fails at construction, not at the first job.
 */
import type { Clock } from "../core/clock.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError } from "../core/errors.ts";
import { checkOptions } from "../core/options.ts";
import { type AlgorithmSpec, type RuleSpec, validateRule } from "../core/spec.ts";
import type { Store } from "../core/store.ts";
import { MemoryStore } from "../stores/memory/memory-store.ts";
import { type AdaptiveOptions, type AdaptiveParams, resolveAdaptive } from "./adaptive-rate.ts";
import { rollingLagMs, startSafeRate } from "./start-safe-rate.ts";

/** Options of `createThrottle`. At least one of `rate` and `concurrency` is required. */
export interface ThrottleOptions {
  /** Namespace of the throttle's state in its store: throttles with one name on one shared store are one throttle. */
  name?: string;
  /** Units admitted per key: any spec or composite (a job takes its `cost` in units, e.g. tokens). */
  rate?: RuleSpec;
  /** Jobs running at once per key (each job holds one slot, whatever its cost). */
  concurrency?: number;
  /** How long a running job's slot outlives a dead process (default 60 000 ms); running jobs renew it. */
  leaseMs?: number;
  /** Where the limits live (default: a new MemoryStore); a shared store makes one throttle for the fleet. */
  store?: Store;
  /** Time source (default `systemClock`); a ManualClock drives every wait in tests. */
  clock?: Clock;
  /** Jobs that may wait in this process at once (default: no bound); past it `schedule` rejects with QueueFullError. */
  maxQueued?: number;
  /** `throttle.fetch`: how many times a request answered 429 is sent again after the pause (default 3). */
  retries?: number;
  /** Pause after a 429 that says nothing about when to come back (default 1000 ms). */
  defaultPauseMs?: number;
  /** Longest pause an upstream's headers may impose (default one hour): a broken header cannot stall a key for days. */
  maxPauseMs?: number;
  /**
   * On a shared store, the longest a job waiting for a slot sleeps before asking again (default
   * 100 ms): another process's release wakes no one here. Unused on a MemoryStore, where every
   * release is local and wakes the queue at once.
   */
  pollMs?: number;
  /** The `fetch` that `throttle.fetch` calls (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /**
   * Adapt the rate to the upstream's 429s (needs `rate`): each 429 cuts the key's share of `rate`
   * multiplicatively, time without one recovers it additively, within [floor, 1]; kept in the
   * store, so a shared store shares it with the fleet. `true` for the defaults. See docs/throttle.md.
   */
  adaptive?: boolean | AdaptiveOptions;
  /**
   * On a store that holds a queue for the fleet (RedisStore), serve every job through it: one
   * queue in priority then arrival order across processes, granted and handed off by the store
   * (default true). `false`: each process queues its own jobs and asks the store per job.
   */
  fleet?: boolean;
  /**
   * In a fleet queue, a waiting job whose rate units fall due within this many ms is granted at
   * once, its units taken at the due instant and its start delayed until then (default 50), so
   * no wake-up's lag costs the fleet a slot. 0: grant only what fits now.
   */
  lookaheadMs?: number;
  /**
   * Fleet queue: what a key's jobs do while the store cannot be reached. `"wait"` (default):
   * they keep waiting (until `maxWaitMs`), and none starts without a grant. `{ instances: n }`:
   * they run on a local throttle enforcing this process's 1/n share of each limit (counts
   * divided and rounded down, at least 1; rates divided), until the key is idle again.
   */
  onError?: "wait" | { instances: number };
}

/** Options of `throttle.schedule` (and `wrap`, `fetch`). */
export interface ScheduleOptions {
  /** The queue and limit the job belongs to (default `"default"`): each key has its own. */
  key?: string;
  /** 0 (first) to 9 (last), default 5; first come, first served within a priority. */
  priority?: number;
  /** Units of `rate` the job takes (default 1), e.g. the tokens of an LLM call. */
  cost?: number;
  /** Reject with WaitTimeoutError rather than wait longer than this for a start (default: no bound). */
  maxWaitMs?: number;
  /** Abort the task's signal and reject with a TimeoutError once it has run this long. */
  timeoutMs?: number;
  /** Aborting it removes a waiting job (rejecting with the signal's reason) or aborts a running task's signal. */
  signal?: AbortSignal;
}

/** What the runner works with: every option resolved. */
export interface ResolvedOptions {
  name: string | undefined;
  rate: AlgorithmSpec[] | undefined;
  rateSpec: RuleSpec | undefined;
  /** How late after its unit's store instant a fleet task may start before its unit is re-taken (start-safe-rate.ts); undefined: not counted. */
  rollingLagMs: number | undefined;
  concurrency: number | undefined;
  leaseMs: number;
  store: Store | undefined;
  clock: Clock | undefined;
  maxQueued: number;
  retries: number;
  defaultPauseMs: number;
  maxPauseMs: number;
  pollMs: number;
  fetch: typeof fetch | undefined;
  adaptive: AdaptiveParams | undefined;
  fleet: boolean;
  lookaheadMs: number;
  onError: "wait" | { instances: number };
}

const KNOWN = [
  "name",
  "rate",
  "concurrency",
  "leaseMs",
  "store",
  "clock",
  "maxQueued",
  "retries",
  "defaultPauseMs",
  "maxPauseMs",
  "pollMs",
  "fetch",
  "adaptive",
  "fleet",
  "lookaheadMs",
  "onError",
] as const;

/** Default lease of a running job's slot (the concurrency spec's own default). */
export const DEFAULT_LEASE_MS = 60_000;
/** Default key of jobs scheduled without one. */
export const DEFAULT_KEY = "default";
/** Default priority: the middle of 0–9. */
export const DEFAULT_PRIORITY = 5;

function throttleOnError(value: unknown): "wait" | { instances: number } {
  if (value === undefined || value === "wait") return "wait";
  const instances = (value as { instances?: unknown } | null)?.instances;
  if (typeof value === "object" && value !== null && Object.keys(value).length === 1) {
    return { instances: positiveInteger("onError.instances", instances) };
  }
  throw new ConfigError("onError", `onError must be "wait" or { instances } (got ${describeValue(value)})`, value);
}

function fleetFlag(value: unknown): boolean {
  if (typeof value !== "boolean")
    throw new ConfigError("fleet", `fleet must be true or false (got ${describeValue(value)})`, value);
  return value;
}

function positiveInteger(field: string, value: unknown, min = 1): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(
      field,
      `createThrottle: \`${field}\` must be an integer ≥ ${min} (got ${describeValue(value)})`,
      value,
    );
  }
  return value;
}

/** Checks `createThrottle`'s options and fills in the defaults. */
export function resolveThrottleOptions(options: unknown): ResolvedOptions {
  checkOptions(options, "createThrottle", KNOWN);
  const o = options as ThrottleOptions;
  if (o.rate === undefined && o.concurrency === undefined) {
    throw new ConfigError("rate", "createThrottle needs `rate`, `concurrency` or both (got neither)");
  }
  if (o.name !== undefined && (typeof o.name !== "string" || o.name === "")) {
    throw new ConfigError(
      "name",
      `createThrottle: \`name\` must be a non-empty string (got ${describeValue(o.name)})`,
      o.name,
    );
  }
  // On a store passed in, a task starts up to START_TOLERANCE_MS after its unit's instant (a
  // grant heard, a loop turning): the rolling rules are widened by that much so the real starts
  // hold the rate (start-safe-rate.ts). A MemoryStore (the throttle's own, or one passed in: it is
  // this process's) starts a task in the tick and on the clock its unit was taken by: no lag, the
  // rule as given.
  const given = o.rate === undefined ? undefined : validateRule(o.rate, "rate ");
  const inProcess = o.store === undefined || o.store instanceof MemoryStore;
  const rate = given === undefined || inProcess ? given : startSafeRate(given);
  const concurrency = o.concurrency === undefined ? undefined : positiveInteger("concurrency", o.concurrency);
  if (o.leaseMs !== undefined && concurrency === undefined) {
    throw new ConfigError("leaseMs", "createThrottle: `leaseMs` needs `concurrency` (a lease is a running job's slot)");
  }
  const leaseMs = o.leaseMs === undefined ? DEFAULT_LEASE_MS : positiveInteger("leaseMs", o.leaseMs, 3);
  if (
    o.store !== undefined &&
    (typeof o.store !== "object" || o.store === null || typeof o.store.bind !== "function")
  ) {
    throw new ConfigError(
      "store",
      `createThrottle: \`store\` must be a Store (got ${describeValue(o.store)})`,
      o.store,
    );
  }
  if (o.clock !== undefined && (typeof o.clock !== "object" || o.clock === null || typeof o.clock.now !== "function")) {
    throw new ConfigError(
      "clock",
      `createThrottle: \`clock\` must have a now() method (got ${describeValue(o.clock)})`,
      o.clock,
    );
  }
  const maxQueued =
    o.maxQueued === undefined || o.maxQueued === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : positiveInteger("maxQueued", o.maxQueued, 0);
  if (o.fetch !== undefined && typeof o.fetch !== "function") {
    throw new ConfigError(
      "fetch",
      `createThrottle: \`fetch\` must be a function (got ${describeValue(o.fetch)})`,
      o.fetch,
    );
  }
  const adaptive = resolveAdaptive(o.adaptive);
  if (adaptive !== undefined && rate === undefined) {
    throw new ConfigError(
      "adaptive",
      "createThrottle: `adaptive` needs `rate` (it adapts the rate to 429s)",
      o.adaptive,
    );
  }
  return {
    name: o.name,
    rate,
    rollingLagMs: rate === given || given === undefined ? undefined : rollingLagMs(given),
    rateSpec: rate === given || rate === undefined ? o.rate : Array.isArray(o.rate) ? rate : rate[0],
    concurrency,
    leaseMs,
    store: o.store,
    clock: o.clock,
    maxQueued,
    retries: o.retries === undefined ? 3 : positiveInteger("retries", o.retries, 0),
    defaultPauseMs: o.defaultPauseMs === undefined ? 1000 : positiveInteger("defaultPauseMs", o.defaultPauseMs),
    maxPauseMs: o.maxPauseMs === undefined ? 3_600_000 : positiveInteger("maxPauseMs", o.maxPauseMs),
    pollMs: o.pollMs === undefined ? 100 : positiveInteger("pollMs", o.pollMs),
    fetch: o.fetch,
    adaptive,
    fleet: o.fleet === undefined ? true : fleetFlag(o.fleet),
    lookaheadMs: o.lookaheadMs === undefined ? 50 : positiveInteger("lookaheadMs", o.lookaheadMs, 0),
    onError: throttleOnError(o.onError),
  };
}

/** A schedule call's options, checked. */
export interface JobOptions {
  key: string;
  priority: number;
  cost: number;
  maxWaitMs: number;
  timeoutMs: number;
  signal: AbortSignal | undefined;
}

const SCHEDULE_KNOWN = ["key", "priority", "cost", "maxWaitMs", "timeoutMs", "signal"] as const;

function duration(field: string, value: unknown, min: number): number {
  if (value === undefined) return Number.POSITIVE_INFINITY;
  if (typeof value !== "number" || Number.isNaN(value) || value < min) {
    throw new ArgumentError(
      `schedule: \`${field}\` must be a number of ms ${min === 0 ? "≥ 0" : "> 0"} (got ${describeValue(value)})`,
    );
  }
  return value;
}

/** Checks `schedule`'s options (ArgumentError naming the option and what arrived). */
export function resolveJobOptions(options: ScheduleOptions | undefined): JobOptions {
  if (options === undefined) {
    return {
      key: DEFAULT_KEY,
      priority: DEFAULT_PRIORITY,
      cost: 1,
      maxWaitMs: Number.POSITIVE_INFINITY,
      timeoutMs: Number.POSITIVE_INFINITY,
      signal: undefined,
    };
  }
  checkOptions(options, "schedule", SCHEDULE_KNOWN);
  const { key = DEFAULT_KEY, priority = DEFAULT_PRIORITY, cost = 1, signal } = options;
  if (typeof key !== "string")
    throw new ArgumentError(`schedule: \`key\` must be a string (got ${describeValue(key)})`);
  if (typeof priority !== "number" || !Number.isInteger(priority) || priority < 0 || priority > 9) {
    throw new ArgumentError(`schedule: \`priority\` must be an integer 0–9 (got ${describeValue(priority)})`);
  }
  if (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1) {
    throw new ArgumentError(`schedule: \`cost\` must be a positive integer (got ${describeValue(cost)})`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ArgumentError(`schedule: \`signal\` must be an AbortSignal (got ${describeValue(signal)})`);
  }
  return {
    key,
    priority,
    cost,
    maxWaitMs: duration("maxWaitMs", options.maxWaitMs, 0),
    timeoutMs: duration("timeoutMs", options.timeoutMs, Number.MIN_VALUE),
    signal,
  };
}

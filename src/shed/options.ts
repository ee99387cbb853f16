/** The options of `loadShed` and their checks: a typo or a bad value fails when the app starts. */
import type { Clock } from "../core/clock.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError } from "../core/errors.ts";
import { checkOptions } from "../core/options.ts";
import type { Store } from "../core/store.ts";
import { allowances, heldShares, type Reserve } from "./admission.ts";
import { GRADIENT_DEFAULTS, type GradientOptions, type GradientParams } from "./gradient.ts";
import { PRIORITY_LEVELS, type PressureParams } from "./pressure.ts";

/** Options of `loadShed`, for requests of type `Req`. */
export interface LoadShedOptions<Req = unknown> {
  /** Requests in flight in this process: a number, or `"adaptive"` to follow measured latency. */
  limit?: number | "adaptive";
  /** Tuning of `limit: "adaptive"`. */
  adaptive?: GradientOptions;
  /** The request's priority, 0 (most critical) to 9 (least); default 5 for every request. */
  priority?: (request: Req) => number;
  /** Shares of `limit` held back for priorities at or below a level, e.g. `{ 1: 0.2 }`. */
  reserve?: Reserve;
  /** Shed from the least critical level up while the event loop's mean delay exceeds this (ms). */
  maxEventLoopDelayMs?: number;
  /** Shed from the least critical level up while the event loop is busier than this share of the time, in (0, 1]. */
  maxEventLoopUtilization?: number;
  /** How often the event loop is sampled, in ms (default 250). */
  sampleIntervalMs?: number;
  /** The band under an event-loop threshold where the shedding level holds, as a share of it (default 0.2). */
  deadZone?: number;
  /** Samples in a row under the dead zone before one more level is served (default 3). */
  rampSamples?: number;
  /** `Retry-After` of a shed request, in seconds (default 1). */
  retryAfterSeconds?: number;
  /** The `name` label of the metrics (default "default"). */
  name?: string;
  /** Measures latencies (default: a monotonic high-resolution stopwatch); tests pass a `ManualClock`. */
  clock?: Clock;
  /**
   * Makes `limit` a fleet limit: requests in flight across every process sharing this store
   * (e.g. a `RedisStore`), held as leases of the concurrency spec. Needs a numeric `limit`.
   */
  store?: Store;
  /** With `store`: how long a lease outlives a process that died holding it, in ms (default 60 000; above your longest request). */
  leaseMs?: number;
}

/** Every option `loadShed` reads. */
export const LOAD_SHED_OPTION_KEYS = [
  "limit",
  "adaptive",
  "priority",
  "reserve",
  "maxEventLoopDelayMs",
  "maxEventLoopUtilization",
  "sampleIntervalMs",
  "deadZone",
  "rampSamples",
  "retryAfterSeconds",
  "name",
  "clock",
  "store",
  "leaseMs",
] as const;

/** The checked options, defaults filled in. */
export interface ShedConfig<Req> {
  limit: number | "adaptive" | undefined;
  adaptive: GradientParams;
  priority: ((request: Req) => number) | undefined;
  reserve: Reserve;
  maxEventLoopDelayMs: number | undefined;
  maxEventLoopUtilization: number | undefined;
  sampleIntervalMs: number;
  pressure: PressureParams;
  retryAfterSeconds: number;
  name: string;
  clock: Clock | undefined;
  store: Store | undefined;
  leaseMs: number;
}

const fail = (name: string, expected: string, value: unknown): never => {
  throw new ArgumentError(`loadShed: \`${name}\` must be ${expected} (got ${describeValue(value)})`);
};

function positive(name: string, value: unknown, fallback: number, integer = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    return fail(name, integer ? "a positive integer" : "a positive finite number", value);
  }
  return value;
}

function share(name: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value > 0) || !(value <= max)) {
    return fail(name, `a number in (0, ${max}]`, value);
  }
  return value;
}

function checkReserve(reserve: unknown): Reserve {
  if (reserve === undefined) return {};
  if (typeof reserve !== "object" || reserve === null || Array.isArray(reserve)) {
    return fail("reserve", "an object of priority → share, e.g. { 1: 0.2 }", reserve);
  }
  let total = 0;
  const out: Record<number, number> = {};
  for (const [key, value] of Object.entries(reserve)) {
    const level = Number(key);
    // Level 9 is the least critical: a reserve "for 9 and below" holds nothing back from anyone.
    if (!/^[0-8]$/.test(key)) return fail(`reserve`, "keyed by priority levels 0–8", key);
    if (typeof value !== "number" || !(value > 0) || !(value < 1)) {
      return fail(`reserve[${key}]`, "a share in (0, 1)", value);
    }
    total += value;
    out[level] = value;
  }
  if (!(total < 1)) return fail("reserve", "shares that add up to less than 1", total);
  return out;
}

function checkAdaptive(options: unknown): GradientParams {
  if (options === undefined) return GRADIENT_DEFAULTS;
  checkOptions(options, "loadShed `adaptive`", Object.keys(GRADIENT_DEFAULTS));
  const o = options as GradientOptions;
  const d = GRADIENT_DEFAULTS;
  const p: GradientParams = {
    minLimit: positive("adaptive.minLimit", o.minLimit, d.minLimit, true),
    maxLimit: positive("adaptive.maxLimit", o.maxLimit, d.maxLimit, true),
    initialLimit: positive("adaptive.initialLimit", o.initialLimit, d.initialLimit, true),
    tolerance: positive("adaptive.tolerance", o.tolerance, d.tolerance),
    smoothing: share("adaptive.smoothing", o.smoothing, d.smoothing, 1),
    longWindow: positive("adaptive.longWindow", o.longWindow, d.longWindow, true),
    windowMs: positive("adaptive.windowMs", o.windowMs, d.windowMs),
    minSamples: positive("adaptive.minSamples", o.minSamples, d.minSamples, true),
    probeIntervalMs: positive("adaptive.probeIntervalMs", o.probeIntervalMs, d.probeIntervalMs),
  };
  if (p.minLimit > p.maxLimit) fail("adaptive.minLimit", `at most maxLimit (${p.maxLimit})`, p.minLimit);
  if (p.tolerance < 1) fail("adaptive.tolerance", "at least 1", p.tolerance);
  return p;
}

/** Checks `options` (unknown keys and bad values throw ArgumentError naming them); `extra` are the adapter's own keys. */
export function checkShedOptions<Req>(options: unknown, extra: readonly string[] = []): ShedConfig<Req> {
  checkOptions(options, "loadShed", [...LOAD_SHED_OPTION_KEYS, ...extra]);
  const o = options as LoadShedOptions<Req>;
  if (o.limit !== undefined && o.limit !== "adaptive") positive("limit", o.limit, 0, true);
  if (o.adaptive !== undefined && o.limit !== "adaptive")
    fail("adaptive", 'set only with limit: "adaptive"', o.adaptive);
  if (o.priority !== undefined && typeof o.priority !== "function") fail("priority", "a function", o.priority);
  const maxDelay =
    o.maxEventLoopDelayMs === undefined ? undefined : positive("maxEventLoopDelayMs", o.maxEventLoopDelayMs, 0);
  const maxUtilization =
    o.maxEventLoopUtilization === undefined
      ? undefined
      : share("maxEventLoopUtilization", o.maxEventLoopUtilization, 0, 1);
  if (o.limit === undefined && maxDelay === undefined && maxUtilization === undefined) {
    throw new ArgumentError("loadShed needs `limit`, `maxEventLoopDelayMs` or `maxEventLoopUtilization`");
  }
  const reserve = checkReserve(o.reserve);
  if (Object.keys(reserve).length > 0 && o.limit === undefined) fail("reserve", "set with `limit`", o.reserve);
  // A share of a slot holds the whole slot: on a small limit a reserve can hold every slot. In
  // one process the shedder then admits any level while nothing is in flight (Shedder.admit);
  // a fleet cannot see that without a round trip, and would shed those levels forever.
  if (
    o.store !== undefined &&
    typeof o.limit === "number" &&
    (allowances(o.limit, heldShares(reserve))[PRIORITY_LEVELS - 1] as number) < 1
  ) {
    fail(
      "reserve",
      `shares that leave the least critical priority at least one of the fleet limit's ${o.limit} slots`,
      o.reserve,
    );
  }
  if (o.name !== undefined && (typeof o.name !== "string" || o.name === "")) fail("name", "a non-empty string", o.name);
  if (o.clock !== undefined && typeof (o.clock as { now?: unknown } | null)?.now !== "function") {
    fail("clock", "a Clock (an object with now())", o.clock);
  }
  if (o.store !== undefined) {
    if (typeof (o.store as { bind?: unknown } | null)?.bind !== "function") fail("store", "a sluice Store", o.store);
    if (typeof o.limit !== "number")
      fail("store", 'used with a numeric `limit` (the fleet limit; "adaptive" is per process)', o.limit);
  }
  if (o.leaseMs !== undefined && o.store === undefined) fail("leaseMs", "set only with `store`", o.leaseMs);
  const deadZone = o.deadZone === undefined ? 0.2 : share("deadZone", o.deadZone, 0.2, 1);
  if (deadZone >= 1) fail("deadZone", "below 1", deadZone);
  return {
    limit: o.limit,
    adaptive: checkAdaptive(o.adaptive),
    priority: o.priority,
    reserve,
    maxEventLoopDelayMs: maxDelay,
    maxEventLoopUtilization: maxUtilization,
    sampleIntervalMs: positive("sampleIntervalMs", o.sampleIntervalMs, 250),
    pressure: { deadZone, rampSamples: positive("rampSamples", o.rampSamples, 3, true) },
    retryAfterSeconds: positive("retryAfterSeconds", o.retryAfterSeconds, 1, true),
    name: o.name ?? "default",
    clock: o.clock,
    store: o.store,
    leaseMs: positive("leaseMs", o.leaseMs, 60_000, true),
  };
}

/** The priority `fn` gives `request` (5 without `fn`); anything but an integer 0–9 throws ArgumentError. */
export function priorityOf<Req>(fn: ((request: Req) => number) | undefined, request: Req): number {
  if (fn === undefined) return DEFAULT_PRIORITY;
  const priority = fn(request);
  if (Number.isInteger(priority) && priority >= 0 && priority < PRIORITY_LEVELS) return priority;
  return fail("priority(request)", "an integer from 0 to 9", priority);
}

/** The priority of a request when no `priority` function is given. */
export const DEFAULT_PRIORITY = 5;

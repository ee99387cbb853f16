/**
 * The adaptive rate's arithmetic (AIMD, as TCP adapts its window to losses): a factor in
 * [floor, 1] of the configured rate, cut multiplicatively on each upstream 429 and recovered
 * additively with time, never above 1 (the configured rate) and never below `floor`. Pure steps;
 * where the factor lives (the store, shared by the fleet) is adaptive-rate-store.ts.
 */
import { describeValue } from "../core/describe-value.ts";
import { ConfigError } from "../core/errors.ts";
import { checkOptions } from "../core/options.ts";

/** The `adaptive` option of `createThrottle`: `true` for the defaults, or some of them. */
export interface AdaptiveOptions {
  /** What a 429 multiplies the factor by (default 0.5), in (0, 1). */
  cut?: number;
  /** How much of the configured rate comes back per second without a 429 (default 0.05: from half to all in 10 s). */
  recoverPerSecond?: number;
  /** The least share of the configured rate the throttle keeps (default 0.1), in (0, 1]. */
  floor?: number;
  /** How often a process re-reads the fleet's factor from the store per key (default 1000 ms). */
  refreshMs?: number;
}

/** The adaptive rate's parameters, resolved. */
export interface AdaptiveParams {
  cut: number;
  recoverPerSecond: number;
  floor: number;
  refreshMs: number;
}

/** The defaults of {@link AdaptiveOptions}. */
export const ADAPTIVE_DEFAULTS: Readonly<AdaptiveParams> = {
  cut: 0.5,
  recoverPerSecond: 0.05,
  floor: 0.1,
  refreshMs: 1000,
};

function share(field: string, value: unknown, fallback: number, closedAtOne: boolean): number {
  if (value === undefined) return fallback;
  const ok = typeof value === "number" && value > 0 && (closedAtOne ? value <= 1 : value < 1);
  if (!ok) {
    throw new ConfigError(
      `adaptive.${field}`,
      `createThrottle: \`adaptive.${field}\` must be a number in (0, 1${closedAtOne ? "]" : ")"} (got ${describeValue(value)})`,
      value,
    );
  }
  return value;
}

/** Checks the `adaptive` option (undefined or false: no adaptation). */
export function resolveAdaptive(value: unknown): AdaptiveParams | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { ...ADAPTIVE_DEFAULTS };
  if (typeof value !== "object" || value === null) {
    throw new ConfigError(
      "adaptive",
      `createThrottle: \`adaptive\` must be true or { cut?, recoverPerSecond?, floor?, refreshMs? } (got ${describeValue(value)})`,
      value,
    );
  }
  checkOptions(value, "createThrottle: adaptive", ["cut", "recoverPerSecond", "floor", "refreshMs"] as const);
  const o = value as AdaptiveOptions;
  const recover = o.recoverPerSecond ?? ADAPTIVE_DEFAULTS.recoverPerSecond;
  if (typeof recover !== "number" || !Number.isFinite(recover) || recover <= 0) {
    throw new ConfigError(
      "adaptive.recoverPerSecond",
      `createThrottle: \`adaptive.recoverPerSecond\` must be a number > 0 (got ${describeValue(recover)})`,
      recover,
    );
  }
  const refreshMs = o.refreshMs ?? ADAPTIVE_DEFAULTS.refreshMs;
  if (typeof refreshMs !== "number" || !Number.isSafeInteger(refreshMs) || refreshMs < 1) {
    throw new ConfigError(
      "adaptive.refreshMs",
      `createThrottle: \`adaptive.refreshMs\` must be an integer ≥ 1 (got ${describeValue(refreshMs)})`,
      refreshMs,
    );
  }
  return {
    cut: share("cut", o.cut, ADAPTIVE_DEFAULTS.cut, false),
    recoverPerSecond: recover,
    floor: share("floor", o.floor, ADAPTIVE_DEFAULTS.floor, true),
    refreshMs,
  };
}

/** Keeps a factor within [floor, 1]. */
export function bounded(factor: number, p: AdaptiveParams): number {
  return Math.min(1, Math.max(p.floor, factor));
}

/** The factor after a 429: cut multiplicatively, never below the floor. */
export function afterCut(factor: number, p: AdaptiveParams): number {
  return bounded(factor * p.cut, p);
}

/** The factor `elapsedMs` after it was `factor`, with no 429 in between: recovered additively, never above 1. */
export function recovered(factor: number, elapsedMs: number, p: AdaptiveParams): number {
  return bounded(factor + (p.recoverPerSecond * Math.max(0, elapsedMs)) / 1000, p);
}

/**
 * The units a job of `cost` takes at `factor`, so that jobs pass at `factor` × the configured
 * rate: `cost / factor` on average, whole units each, the fraction carried in `owed` from one
 * job to the next (error diffusion), never less than `cost` (never above the configured rate).
 * `take` is what the rate must admit (never more than `maxCost`, the most it can admit at once:
 * a cost past it would wait forever); the rest is `extra`, spent as a penalty once the job is
 * admitted, so a rate that holds one unit (`burst: 1`, bottleneck's `minTime`) is slowed by a
 * longer interval where a roomier one is slowed by larger takes.
 */
export function scaledCost(
  cost: number,
  factor: number,
  owed: number,
  maxCost: number,
): { take: number; extra: number; owed: number } {
  const due = owed + cost / factor;
  // 1e-9: 1 / 0.5 + 0 must give 2 whatever the float rounding of the division.
  const units = Math.max(cost, Math.floor(due + 1e-9));
  const left = due - units;
  const take = Math.min(maxCost, units);
  return { take, extra: units - take, owed: left > 0 && left < 1 ? left : 0 };
}

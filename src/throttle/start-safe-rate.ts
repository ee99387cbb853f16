/**
 * The rate a shared-store throttle checks, so that its tasks' REAL starts hold the user's rate in
 * every rolling window (issue 32). A unit is charged at its grant instant `a`; the task starts at
 * `r ∈ [a, a + m]` (m = START_TOLERANCE_MS: a later start re-takes its unit at its real start).
 * Starts in any rolling window [s, s + W) were granted in [s − m, s + W): a rolling rule checked
 * over W widened by m (a log's window W + m; a bucket's burst less what m refills) then admits no
 * more grants there than the user's rule admits in W. See docs/throttle.md.
 */

import type { AlgorithmSpec } from "../algorithms/specs.ts";

/**
 * How late a task may start after its rate unit's instant (ms) before the unit is re-taken at its
 * real start; also the margin the rolling rules are widened by (startSafeRate): one number, since
 * the widening covers exactly the lag the re-take lets through.
 */
export const START_TOLERANCE_MS = 20;

/** The algorithms startSafeSpec widens: a rolling-window checker can see their late starts' excess. */
export const ROLLING: ReadonlySet<string> = new Set(["sliding-log", "sliding-window", "gcra", "token-bucket"]);

/**
 * One member made start-safe for a start lag of at most `m` ms: a sliding log or sliding window
 * checked over `windowMs + m`; a gcra's burst (a token bucket's capacity) less the units `m`
 * refills, when one unit is left. Fixed windows (runner.ts keeps a start in its unit's window),
 * leaky buckets (the runner waits out their delay) and concurrency are left as they are.
 *
 * A bucket whose burst `m` refills entirely (emission interval T, tolerance τ = (burst − 1)·T,
 * and m > τ: a gcra or token bucket of burst 1 refilling faster than every m ms, or of a burst of
 * a few at a faster rate still) gets burst 1 and an emission interval widened by m − τ: grants
 * at least T' = T + m − τ apart, each start at most m after its grant, are real starts at least
 * (j − i)·T' − m ≥ (j − i)·T − τ apart for any i < j, which is the user's gcra's own condition
 * (virtual scheduling). Its cost: the rate falls to T / T' of the limit (a gcra of 100 a second,
 * burst 1: 10 ms → 30 ms, a third; docs/throttle.md). Unit costs: a job of cost c is c units.
 */
export function startSafeSpec(spec: AlgorithmSpec, m: number): AlgorithmSpec {
  switch (spec.algorithm) {
    case "sliding-log":
    case "sliding-window":
      return { ...spec, windowMs: spec.windowMs + m };
    case "gcra": {
      const burst = spec.burst ?? spec.limit;
      const left = burst - Math.ceil((m * spec.limit) / spec.periodMs);
      if (left >= 1) return { ...spec, burst: left };
      // periodMs / limit widened by m − τ: periodMs' = periodMs + limit·m − (burst − 1)·periodMs.
      return { ...spec, burst: 1, periodMs: spec.periodMs + spec.limit * m - (burst - 1) * spec.periodMs };
    }
    case "token-bucket": {
      const left = spec.capacity - Math.ceil((m * spec.refillPerSecond) / 1000);
      if (left >= 1) return { ...spec, capacity: left };
      const t = 1000 / spec.refillPerSecond;
      return { ...spec, capacity: 1, refillPerSecond: 1000 / (t + m - (spec.capacity - 1) * t) };
    }
    default:
      return spec;
  }
}

/**
 * How late after its unit's store instant a task may start with `specs` (as given) widened by
 * startSafeRate(specs, m) still holding: a log's window covers `m`; a bucket's burst less k units
 * covers k refills (k = ⌈m × rate⌉, so at least `m`: 200 ms for a gcra of 5 a second); one whose
 * interval was widened (startSafeSpec: m refills its whole burst) covers `m` exactly.
 * Undefined without a rolling member (no lag counted from the store's instant).
 */
export function rollingLagMs(specs: readonly AlgorithmSpec[], m: number = START_TOLERANCE_MS): number | undefined {
  let lag: number | undefined;
  for (const spec of specs) {
    if (!ROLLING.has(spec.algorithm)) continue;
    // The units a bucket holds back cover ⌈m × rate⌉ refills; a widened interval covers m.
    let covers = m;
    if (spec.algorithm === "gcra") {
      const safe = startSafeSpec(spec, m) as typeof spec;
      const units = (spec.burst ?? spec.limit) - (safe.burst as number);
      if (safe.periodMs === spec.periodMs) covers = Math.max(m, Math.floor((units * spec.periodMs) / spec.limit));
    } else if (spec.algorithm === "token-bucket") {
      const safe = startSafeSpec(spec, m) as typeof spec;
      const units = spec.capacity - safe.capacity;
      if (safe.refillPerSecond === spec.refillPerSecond) {
        covers = Math.max(m, Math.floor((units * 1000) / spec.refillPerSecond));
      }
    }
    lag = Math.min(lag ?? covers, covers);
  }
  return lag;
}

/** Every member of a rate made start-safe (startSafeSpec), member by member. */
export function startSafeRate(specs: readonly AlgorithmSpec[], m: number = START_TOLERANCE_MS): AlgorithmSpec[] {
  return specs.map((spec) => startSafeSpec(spec, m));
}

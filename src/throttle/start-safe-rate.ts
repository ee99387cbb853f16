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
 * refills, never below 1 (a rate whose one unit refills in under `m` cannot be made safe this way:
 * docs/throttle.md says what to do). Fixed windows (runner.ts keeps a start in its unit's window),
 * leaky buckets (the runner waits out their delay) and concurrency are left as they are.
 */
export function startSafeSpec(spec: AlgorithmSpec, m: number): AlgorithmSpec {
  switch (spec.algorithm) {
    case "sliding-log":
    case "sliding-window":
      return { ...spec, windowMs: spec.windowMs + m };
    case "gcra": {
      const burst = spec.burst ?? spec.limit;
      return { ...spec, burst: Math.max(1, burst - Math.ceil((m * spec.limit) / spec.periodMs)) };
    }
    case "token-bucket":
      return { ...spec, capacity: Math.max(1, spec.capacity - Math.ceil((m * spec.refillPerSecond) / 1000)) };
    default:
      return spec;
  }
}

/**
 * How late after its unit's store instant a task may start with `specs` (as given) widened by
 * startSafeRate(specs, m) still holding: a log's window covers `m`; a bucket's burst less k units
 * covers k refills (k = ⌈m × rate⌉, so at least `m`: 200 ms for a gcra of 5 a second). A member
 * whose burst met the floor of 1 covers less than `m`: `m` anyway (docs/throttle.md: its residual).
 * Undefined without a rolling member (no lag counted from the store's instant).
 */
export function rollingLagMs(specs: readonly AlgorithmSpec[], m: number = START_TOLERANCE_MS): number | undefined {
  let lag: number | undefined;
  for (const spec of specs) {
    if (!ROLLING.has(spec.algorithm)) continue;
    // The units a bucket holds back (fewer than ⌈m × rate⌉ where the floor of 1 met it).
    let covers = m;
    if (spec.algorithm === "gcra") {
      const units = (spec.burst ?? spec.limit) - ((startSafeSpec(spec, m) as typeof spec).burst as number);
      covers = Math.max(m, Math.floor((units * spec.periodMs) / spec.limit));
    } else if (spec.algorithm === "token-bucket") {
      const units = spec.capacity - (startSafeSpec(spec, m) as typeof spec).capacity;
      covers = Math.max(m, Math.floor((units * 1000) / spec.refillPerSecond));
    }
    lag = Math.min(lag ?? covers, covers);
  }
  return lag;
}

/** Every member of a rate made start-safe (startSafeSpec), member by member. */
export function startSafeRate(specs: readonly AlgorithmSpec[], m: number = START_TOLERANCE_MS): AlgorithmSpec[] {
  return specs.map((spec) => startSafeSpec(spec, m));
}

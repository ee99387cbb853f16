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

/** Every member of a rate made start-safe (startSafeSpec), member by member. */
export function startSafeRate(specs: readonly AlgorithmSpec[], m: number = START_TOLERANCE_MS): AlgorithmSpec[] {
  return specs.map((spec) => startSafeSpec(spec, m));
}

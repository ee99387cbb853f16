/**
 * One nominal limit ("N per window") written as each algorithm's parameters, so `compare`
 * runs like against like:
 *   fixed-window, sliding-log, sliding-window: limit N, windowMs W
 *   token-bucket: capacity N, refillPerSecond N/W      (a full window's worth at once, then N per W)
 *   gcra:         limit N, periodMs W, burst N          (the same admissions as that token bucket)
 *   leaky-bucket: capacity N, leakPerSecond N/W        (queue of N, drained at N per W)
 */
import { ALGORITHMS, type AlgorithmSpec, type RateAlgorithmName } from "../../index.ts";

/** The spec of `algorithm` for a nominal limit of `limit` per `windowMs`. */
export function nominalSpec(algorithm: RateAlgorithmName, limit: number, windowMs: number): AlgorithmSpec {
  const perSecond = (limit * 1000) / windowMs;
  switch (algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return { algorithm, limit, windowMs };
    case "token-bucket":
      return { algorithm, capacity: limit, refillPerSecond: perSecond };
    case "gcra":
      return { algorithm, limit, periodMs: windowMs, burst: limit };
    case "leaky-bucket":
      return { algorithm, capacity: limit, leakPerSecond: perSecond };
  }
}

/** All six specs for one nominal limit, in the docs' order. */
export function nominalSpecs(limit: number, windowMs: number): AlgorithmSpec[] {
  return ALGORITHMS.map((a) => nominalSpec(a, limit, windowMs));
}

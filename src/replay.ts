/**
 * `replay` and `classify`: run a list of timestamped events through a rule on a manual clock.
 * The same decisions a live limiter would make, reproducible from a log file.
 */

import type { Decision } from "./algorithms/decision.ts";
import { ManualClock } from "./core/clock.ts";
import { ArgumentError } from "./core/errors.ts";
import type { LimitSpec, RuleSpec } from "./core/spec.ts";
import { createLimiter } from "./limiter.ts";

/** One event: a timestamp in ms, or `{ at, key?, cost? }` (key defaults to `"default"`). */
export type ReplayEvent = number | { at: number; key?: string; cost?: number };

/**
 * Decides every event in order on a fresh in-process limiter whose clock is set to each
 * event's time (times may go backwards; that is read as "no time passed").
 *
 * @example replay([0, 100, 200, 1000], { algorithm: "fixed-window", limit: 2, windowMs: 1000 }).map(d => d.allowed)
 */
export function replay(events: readonly ReplayEvent[], spec: RuleSpec): Decision[] {
  if (!Array.isArray(events)) throw new ArgumentError(`events must be an array (got ${typeof events})`);
  const clock = new ManualClock();
  const limiter = createLimiter(spec, { clock });
  return events.map((event, i) => {
    const { at, key = "default", cost = 1 } = typeof event === "number" ? { at: event } : (event ?? {});
    if (typeof at !== "number" || !Number.isFinite(at)) {
      throw new ArgumentError(`events[${i}].at must be a finite number of ms (got ${String(at)})`);
    }
    clock.set(at);
    try {
      return limiter.tryAcquire(key, cost);
    } catch (error) {
      if (error instanceof ArgumentError) throw new ArgumentError(`events[${i}]: ${error.message}`, { cause: error });
      throw error;
    }
  });
}

/** The seed's `classifyPings`: whether each timestamp (all one user) is allowed by `spec`. */
export function classify(timestamps: readonly number[], spec: LimitSpec): boolean[] {
  return replay(timestamps, spec).map((d) => d.allowed);
}

/**
 * GCRA (generic cell rate algorithm): one number per key, the theoretical arrival time.
 * Admits exactly what a token bucket of `burst` refilled at `limit/periodMs` admits, with
 * half the state and evenly spaced emissions. Choose it as the default for per-user API
 * limits at scale (what Stripe, Shopify and redis-cell use).
 */
import { ceilMs, type Decision, decision, EPSILON } from "../decision.ts";
import type { GcraSpec, LeakyBucketSpec } from "../spec.ts";
import type { Algorithm } from "./algorithm.ts";

/** GCRA / leaky-bucket state: the theoretical arrival time `tat` of the next request. */
export interface GcraState {
  tat: number;
}

/**
 * The shared arithmetic of gcra and leaky-bucket: emission interval `T`, tolerance `τ = burst·T`.
 * Comparisons allow {@link EPSILON} of float noise, because `T` may be an inexact quotient.
 */
function emission(spec: GcraSpec | LeakyBucketSpec, T: number, burst: number, delays: boolean): Algorithm<GcraState> {
  const tau = burst * T;
  const whole = (ms: number) => Math.max(0, Math.floor((tau - ms) / T + 1e-9));
  return {
    kind: spec.algorithm,
    spec,
    limit: burst,
    horizonMs: tau,
    create: () => ({ tat: Number.NEGATIVE_INFINITY }),
    freshAt: (s) => s.tat,
    step(state, now, cost, commit): Decision {
      const start = Math.max(state.tat, now);
      const next = start + cost * T;
      const backlog = start - now; // ms of earlier requests still ahead of this one
      if (cost > burst) {
        return decision(false, burst, whole(backlog), Number.POSITIVE_INFINITY, ceilMs(backlog));
      }
      if (next - now <= tau + EPSILON) {
        if (commit) state.tat = next;
        return decision(true, burst, whole(next - now), 0, ceilMs(next - now), delays ? ceilMs(backlog) : 0);
      }
      let retry = ceilMs(next - tau - now);
      // Float noise must never tell a client to come back before it can pass.
      while (Math.max(state.tat, now + retry) + cost * T - (now + retry) > tau + EPSILON) retry++;
      return decision(false, burst, whole(backlog), retry, ceilMs(backlog));
    },
  };
}

/** Builds the gcra step for `spec` (`burst` defaults to `limit`). */
export function gcra(spec: GcraSpec): Algorithm<GcraState> {
  return emission(spec, spec.periodMs / spec.limit, spec.burst ?? spec.limit, false);
}

/**
 * Leaky bucket: a queue of `capacity` that drains at `leakPerSecond`. Admitted requests get
 * `delayMs`, the time until those queued ahead have drained; honouring it turns any burst into
 * a constant outflow (nginx `limit_req` without `nodelay`). Choose it to protect a downstream
 * that needs a smooth rate (a payment gateway, a legacy backend), not to fail fast.
 */
export function leakyBucket(spec: LeakyBucketSpec): Algorithm<GcraState> {
  return emission(spec, 1000 / spec.leakPerSecond, spec.capacity, true);
}

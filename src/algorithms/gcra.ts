/**
 * GCRA (generic cell rate algorithm): one number per key, the theoretical arrival time.
 * Admits exactly what a token bucket of `burst` refilled at `limit/periodMs` admits, with
 * half the state and evenly spaced emissions. Choose it as the default for per-user API
 * limits at scale (what Stripe, Shopify and redis-cell use).
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision, EPSILON } from "./decision.ts";
import type { GcraSpec, LeakyBucketSpec } from "./specs.ts";

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
  // Whole units that still fit behind `ms` of backlog, by the same test (and tolerance) as admission.
  const whole = (ms: number, tol: number) => Math.max(0, Math.floor((tau + tol - ms) / T + 1e-9));
  return {
    kind: spec.algorithm,
    spec,
    limit: burst,
    horizonMs: tau,
    create: () => ({ tat: Number.NEGATIVE_INFINITY }),
    freshAt: (s) => s.tat,
    shape: spec.algorithm,
    summary: {
      // The latest theoretical arrival time: a later one admits less at every instant.
      slots: 1,
      join(cells, at, state) {
        if (Number.isNaN(cells[at]) || state.tat > (cells[at] as number)) cells[at] = state.tat;
      },
      read: (cells, at) => (Number.isNaN(cells[at]) ? undefined : { tat: cells[at] as number }),
    },
    refund(state, now, cost, at) {
      // Backlog ahead of now shrinks by the refunded emissions; time already past stays past.
      // With a receipt, what has drained since the check is not given back twice.
      const give = at === undefined ? cost * T : Math.max(0, cost * T - Math.max(0, now - at));
      if (state.tat > now) state.tat = Math.max(now, state.tat - give);
    },
    step(state, now, cost, commit): Decision {
      const start = Math.max(state.tat, now);
      const backlog = start - now; // ms of earlier requests still ahead of this one
      // `next − now`, summed from relative figures: at epoch-ms magnitudes `(now + x) − now` is
      // off by up to half an ulp of `now` (~1e-4 ms), which must not decide (nor loop forever).
      const ahead = backlog + cost * T;
      // Absolute times carry rounding proportional to their size; tolerate that much (well under
      // the 1 ms docs/semantics.md §5 allows; integer T and now stay exact because every figure is whole).
      const tol = EPSILON + Math.min(0.25, (Math.abs(now) + tau) * 2 ** -44);
      const up = (ms: number) => (ms <= tol ? 0 : Math.ceil(ms - tol)); // ceilMs with that tolerance
      if (cost > burst) {
        return decision(false, burst, whole(backlog, tol), Number.POSITIVE_INFINITY, up(backlog));
      }
      if (ahead <= tau + tol) {
        if (commit) state.tat = start + cost * T;
        return decision(true, burst, whole(ahead, tol), 0, up(ahead), delays ? up(backlog) : 0);
      }
      let retry = up(ahead - tau);
      // Float noise must never tell a client to come back before it can pass. Each step shrinks
      // the backlog left at `now + retry` by 1 ms, so this ends (past 2^53 ms it cannot count).
      while (Math.max(0, backlog - retry) + cost * T > tau + tol && retry < Number.MAX_SAFE_INTEGER) retry++;
      return decision(false, burst, whole(backlog, tol), retry, up(backlog));
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

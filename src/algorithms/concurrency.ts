/**
 * Concurrency: at most `limit` requests in flight per key. A lease is one sliding-log entry
 * (src/algorithms/sliding-log.ts) with the window set to `leaseMs`: it counts from the instant
 * it was acquired (its receipt, the Decision's `at`) until it is released or `leaseMs` has
 * passed, so a holder that crashed frees its slots by itself. Leases taken in the same ms are
 * alike (same expiry), so (key, receipt) names a lease. A lease is logged at its receipt even
 * when the log holds a later one (processes whose clocks differ by a few ms share a store; a
 * sliding log would log it at that later instant, and its release would name nothing).
 *
 * `remaining` is the number of free slots. A denial's `retryAfterMs` is the time until the
 * oldest lease expires: an upper bound, since a release usually frees a slot sooner and no
 * store can know when a holder will release.
 *
 * Leases leave by `release` (or expiry) only: a refund gives back rate units (a request that
 * should not count) and leaves leases alone, so a request that is both refunded (`count`
 * modes) and released frees its slot once, never another request's of the same instant.
 */
import type { Algorithm } from "./algorithm.ts";
import { decision } from "./decision.ts";
import { commitLog, countAt, liveLog, logAlgorithm, type SlidingLogState } from "./sliding-log.ts";
import { type ConcurrencySpec, DEFAULT_LEASE_MS } from "./specs.ts";

/** The lease length of `spec` (its `leaseMs`, or the 60 s default). */
export function leaseMsOf(spec: ConcurrencySpec): number {
  return spec.leaseMs ?? DEFAULT_LEASE_MS;
}

/** Builds the concurrency step for `spec`: the sliding-log step over leases, plus release and renew. */
export function concurrency(spec: ConcurrencySpec): Algorithm<SlidingLogState> {
  const { limit } = spec;
  const W = leaseMsOf(spec);
  const log = logAlgorithm(spec, limit, W, "concurrency");
  return {
    ...log,
    // A release is the log's refund with a receipt: only leases of that instant, while they still count.
    release: (s, now, cost, at) => log.refund(s, now, cost, at),
    refund: () => {},
    renew(s, now, cost, at, commit) {
      // Every unexpired lease is held, also past a limit lowered since (liveLog uncapped).
      const [t, newest, skip] = liveLog(s, now, limit, W, false);
      const n = s.n - skip;
      const free = Math.max(0, limit - n);
      if (countAt(s, skip, at) < cost) {
        return decision(false, limit, free, Number.POSITIVE_INFINITY, n > 0 ? Math.ceil(newest + W - now) : 0);
      }
      // Moved to `now` itself, the new receipt (t is later only when another clock logged a later lease).
      if (commit) commitLog(s, skip, now, cost, limit, at);
      return decision(true, limit, free, 0, Math.ceil(t + W - now));
    },
  };
}

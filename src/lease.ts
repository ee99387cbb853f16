/**
 * The leases of a limiter's decisions (a rule with a concurrency member): the handles an allowed
 * decision carries (src/core/hold-lease.ts), and where they act once the service's updateRule
 * replaced the limiter that gave them (`handOver`).
 */
import type { Decision } from "./algorithms/decision.ts";
import { attachLease, gone, type LeaseAct } from "./core/hold-lease.ts";

/**
 * Gives `d` (allowed, stamped) its `release()` and `renew()`; other decisions are returned as
 * they are. A decision the store's onError answered carries what its fallback gave it (a
 * fallback's lease is released in the fallback, see failure-policy.ts), or nothing.
 */
export function holdLease(d: Decision, act: LeaseAct, peek: () => Decision | Promise<Decision>): Decision {
  if (!d.allowed || d.at === undefined || d.failure !== undefined) return d;
  return attachLease(d, d.at, act, peek);
}

/** What a lease handle may act through after its rule was updated: a limiter, seen structurally. */
export interface LeaseHolder {
  readonly specs: readonly { readonly algorithm: string }[];
  release(key: string, receipt: { cost: number; at: number }): Decision | Promise<Decision>;
  renew(key: string, receipt: { cost: number; at: number }): Decision | Promise<Decision>;
  peek(key: string): Decision | Promise<Decision>;
}

/** Each replaced limiter's successor (updateRule): see `handOver`. */
const successors = new WeakMap<object, LeaseHolder>();

/**
 * `next` replaces `old` (the service's updateRule): leases taken through `old` are released and
 * renewed through `next` from now on, so they are decided under the rule as it now stands, on a
 * binding the store still has (a ClusterStore host forgets a closed limiter's binding, and a
 * RedisStore binding decides with the specs it was made with).
 */
export function handOver(old: object, next: LeaseHolder): void {
  if (old === next) return;
  successors.set(old, next);
}

/** The limiter that now holds `limiter`'s leases: its latest successor, or undefined when none. */
export function successorOf(limiter: object): LeaseHolder | undefined {
  let next = successors.get(limiter);
  if (next === undefined) return undefined;
  for (let later = successors.get(next); later !== undefined; later = successors.get(later)) next = later;
  return next;
}

/**
 * A lease operation through `next`, the limiter that replaced the one the lease was taken with.
 * A rule updated to have no concurrency member holds no leases: the lease is gone (a release
 * answers the peek; a renewal is denied).
 */
export function leaseThrough(
  next: LeaseHolder,
  key: string,
  cost: number,
  op: "release" | "renew",
  at: number,
): Decision | Promise<Decision> {
  if (next.specs.some((s) => s.algorithm === "concurrency")) return next[op](key, { cost, at });
  const d = next.peek(key);
  if (op === "release") return d;
  return d instanceof Promise ? d.then(gone) : gone(d);
}

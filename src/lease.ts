/**
 * The `release()` and `renew()` handles of an allowed decision of a rule with a concurrency
 * member (a lease, src/algorithms/concurrency.ts). A lease is named by its key and its receipt,
 * the decision's `at`; the handles keep the receipt current across renewals and act in order:
 * on an async store each call waits for the one before, so a renewal and a release never race
 * on the same receipt (a release that went first would otherwise let the renewal move another
 * lease of the same instant).
 */
import type { Decision } from "./algorithms/decision.ts";

/** A renewal's answer for a lease no longer held: the key as it stands, denied for good. */
function gone(r: Decision): Decision {
  r.allowed = false;
  r.retryAfterMs = Number.POSITIVE_INFINITY;
  return r;
}

/** What the handles run: a lease operation at a receipt. */
export type LeaseAct = (op: "release" | "renew", at: number) => Decision | Promise<Decision>;

/**
 * Gives `d` (allowed, stamped) its `release()` and `renew()`; other decisions are returned as
 * they are. `peek` reads the key (a renewal after the release answers from it, denied).
 */
export function holdLease(d: Decision, act: LeaseAct, peek: () => Decision | Promise<Decision>): Decision {
  if (!d.allowed || d.at === undefined || d.failure !== undefined) return d;
  let at: number = d.at;
  let released: Decision | Promise<Decision> | undefined;
  // The last call still running on an async store: the next one starts after it settles.
  let running: Promise<unknown> | undefined;
  const inTurn = (call: () => Decision | Promise<Decision>): Decision | Promise<Decision> => {
    const result = running === undefined ? call() : running.then(call);
    if (result instanceof Promise) {
      const settled = result.then(
        () => undefined,
        () => undefined,
      );
      running = settled;
      // The tail is forgotten once nothing newer was queued behind it (a sync store never queues).
      void settled.then(() => {
        if (running === settled) running = undefined;
      });
    }
    return result;
  };
  const renewed = (r: Decision): Decision => {
    if (r.allowed && r.at !== undefined) at = r.at;
    return r;
  };
  const release = () => {
    released ??= inTurn(() => act("release", at));
    return released;
  };
  const renew = () => {
    // Once released, the lease is gone: renewing the receipt could only move another lease of that instant.
    if (released !== undefined) {
      return inTurn(() => {
        const r = peek();
        return r instanceof Promise ? r.then(gone) : gone(r);
      });
    }
    return inTurn(() => {
      const r = act("renew", at);
      return r instanceof Promise ? r.then(renewed) : renewed(r);
    });
  };
  // Not enumerated, as `at` is not: decisions compare, spread and serialise as before.
  Object.defineProperty(d, "release", { value: release, writable: true, configurable: true });
  Object.defineProperty(d, "renew", { value: renew, writable: true, configurable: true });
  return d;
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

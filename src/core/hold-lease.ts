/**
 * The `release()` and `renew()` handles of a lease (src/algorithms/concurrency.ts), built on
 * the decision that took it. A lease is named by its key and its receipt, the decision's `at`;
 * the handles keep the receipt current across renewals and act in order: on an async store each
 * call waits for the one before, so a renewal and a release never race on the same receipt (a
 * release that went first would otherwise let the renewal move another lease of the same
 * instant). In the core because both the limiter (src/lease.ts) and a remote store's fallback
 * (src/stores/remote/failure-policy.ts: a lease the fallback granted is released there) give them.
 */
import type { Decision } from "../algorithms/decision.ts";

/** A renewal's answer for a lease no longer held: the key as it stands, denied for good. */
export function gone(r: Decision): Decision {
  r.allowed = false;
  r.retryAfterMs = Number.POSITIVE_INFINITY;
  return r;
}

/** What the handles run: a lease operation at a receipt. */
export type LeaseAct = (op: "release" | "renew", at: number) => Decision | Promise<Decision>;

/**
 * Gives `d`, an allowed decision whose lease has receipt `receipt`, its `release()` and
 * `renew()`. `peek` reads the key (a renewal after the release answers from it, denied).
 */
export function attachLease(
  d: Decision,
  receipt: number,
  act: LeaseAct,
  peek: () => Decision | Promise<Decision>,
): Decision {
  let at = receipt;
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

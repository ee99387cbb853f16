/**
 * Token bucket: a balance that refills at a steady rate up to `capacity`; each request spends
 * `cost` tokens. O(1) per key; allows bursts up to `capacity`, then settles to the refill rate.
 * Choose it where occasional bursts are fine but the long-run rate is fixed (API clients, jobs).
 */

import type { Algorithm } from "./algorithm.ts";
import { ceilMs, type Decision, decision, EPSILON } from "./decision.ts";
import type { TokenBucketSpec } from "./specs.ts";

/** Token-bucket state: balance `b` in thousandths of a token as of time `t`. */
export interface TokenBucketState {
  b: number;
  t: number;
}

/** Builds the token-bucket step for `spec`. */
export function tokenBucket(spec: TokenBucketSpec): Algorithm<TokenBucketState> {
  const { capacity: C, refillPerSecond: r } = spec;
  // Thousandths of a token per ms equals tokens per second, so whole-number rates stay exact.
  const full = C * 1000;
  const balanceAt = (s: TokenBucketState, now: number) => Math.min(full, s.b + Math.max(0, now - s.t) * r);
  // Float-noise tolerance in thousandths, never more than 1 ms of refill (docs/semantics.md §5):
  // at tiny rates a fixed EPSILON would admit a request seconds before exact arithmetic does.
  const eps = Math.min(EPSILON, r);
  // Never below 0: only a penalty drives the balance negative, and it has no tokens to report.
  const whole = (balance: number) => Math.max(0, Math.floor((balance + eps) / 1000));
  // When the bucket is full again, rounded up to a whole ms past the state's time: at epoch
  // magnitudes `t + dt` would lose any dt below ~2.4e-4 ms, and a store would drop a state that
  // is not fresh yet (a whole-ms sum is exact).
  const fullAt = (s: TokenBucketState) => s.t + Math.ceil((full - s.b) / r);
  /** ms until `need` thousandths fit, for a request denied with `balance` at `now` (state unchanged). */
  const retryAfter = (s: TokenBucketState, now: number, balance: number, need: number) => {
    // A clock behind the last update refills nothing until it catches up ("no time passed"),
    // so the hint includes that lag; the loop below then only absorbs float noise.
    let retry = ceilMs(Math.max(0, s.t - now) + (need - balance) / r);
    // Float noise must never tell a client to come back before it can pass (past 2^53 ms, where
    // `retry + 1 === retry`, it cannot count any further).
    while (balanceAt(s, now + retry) + eps < need && retry < Number.MAX_SAFE_INTEGER) retry++;
    return retry;
  };
  return {
    kind: "token-bucket",
    spec,
    limit: C,
    horizonMs: Math.ceil(full / r),
    create: () => ({ b: full, t: Number.NEGATIVE_INFINITY }),
    freshAt: fullAt,
    // When a stored balance stops mattering depends on capacity and rate (a store's expiry is set
    // from it), so a new capacity or rate starts fresh on every store alike.
    shape: `token-bucket/${C}/${r}`,
    summary: {
      // The instant the bucket is full again: a later one means fewer tokens at every instant.
      slots: 1,
      join(cells, at, state) {
        // Nudged up by two ulps: the sum may have rounded down, and a summary must not admit more.
        const exact = state.t + (full - state.b) / r;
        const when = Number.isFinite(exact) ? exact + Math.abs(exact) * 2 ** -51 : exact;
        if (Number.isNaN(cells[at]) || when > (cells[at] as number)) cells[at] = when;
      },
      read: (cells, at) => (Number.isNaN(cells[at]) ? undefined : { b: 0, t: (cells[at] as number) - full / r }),
    },
    refund(state, now, cost, at) {
      // With a receipt, the check's tokens are taken to refill first (from its own instant on):
      // what has refilled since is not given back twice.
      const give = at === undefined ? cost * 1000 : Math.max(0, cost * 1000 - Math.max(0, now - at) * r);
      state.b = Math.min(full, balanceAt(state, now) + give);
      state.t = Math.max(now, state.t);
    },
    force(state, now, cost) {
      // The balance may go below zero: it refills from there at the same rate.
      state.b = balanceAt(state, now) - cost * 1000;
      state.t = Math.max(now, state.t);
    },
    step(state, now, cost, commit): Decision {
      const balance = balanceAt(state, now);
      const need = cost * 1000;
      if (cost <= C && balance + eps >= need) {
        const left = balance - need;
        if (commit) {
          state.b = left;
          state.t = Math.max(now, state.t);
        }
        return decision(true, C, whole(left), 0, ceilMs((full - left) / r));
      }
      // One Decision for both denials (a cost past the capacity, too few tokens): V8 inlines each
      // call site's callees apart, and a third copy of `decision`, `whole` and `ceilMs` put the
      // step past its inlining budget.
      const retry = cost > C ? Number.POSITIVE_INFINITY : retryAfter(state, now, balance, need);
      return decision(false, C, whole(balance), retry, ceilMs((full - balance) / r));
    },
  };
}

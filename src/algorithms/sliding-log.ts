/**
 * Sliding log: the timestamp of every admitted unit in a ring buffer. Exact — never more than
 * `limit` in any rolling window — at O(limit) memory per key. Choose it where precision matters
 * more than memory and limits are small: login attempts, password resets, OTP sends.
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { SlidingLogSpec } from "./specs.ts";

/**
 * Sliding-log state: a ring buffer of admitted timestamps, oldest at `head`. The buffer grows
 * on demand up to `limit` slots, so a key that sends little holds little. Only the newest
 * `limit` entries can ever matter, so that is all it keeps.
 */
export interface SlidingLogState {
  buf: number[];
  head: number;
  n: number;
}

const at = (s: SlidingLogState, i: number): number => s.buf[(s.head + i) % s.buf.length] as number;

/** Drops the oldest entries until at most `keep` remain (each entry is removed once). */
function dropOldest(s: SlidingLogState, keep: number): void {
  while (s.n > keep) {
    s.head = (s.head + 1) % s.buf.length;
    s.n--;
  }
}

/** Appends `count` copies of `t`, growing the buffer (at most to `limit`) when full. */
function append(s: SlidingLogState, t: number, count: number, limit: number): void {
  if (s.n + count > s.buf.length) {
    const size = Math.min(limit, Math.max(s.n + count, s.buf.length * 2, 4));
    const grown = new Array<number>(size);
    for (let i = 0; i < s.n; i++) grown[i] = at(s, i);
    s.buf = grown;
    s.head = 0;
  }
  for (let i = 0; i < count; i++) s.buf[(s.head + s.n + i) % s.buf.length] = t;
  s.n += count;
}

/** Builds the sliding-log step for `spec`. */
export function slidingLog(spec: SlidingLogSpec): Algorithm<SlidingLogState> {
  const { limit, windowMs: W } = spec;
  return {
    kind: "sliding-log",
    spec,
    limit,
    horizonMs: W,
    create: () => ({ buf: [], head: 0, n: 0 }),
    freshAt: (s) => (s.n > 0 ? at(s, s.n - 1) + W : Number.NEGATIVE_INFINITY),
    shape: `sliding-log/${W}`,
    summary: {
      // (newest, count): `count` entries all at the newest instant count at least as long and as
      // much as the log they stand for, in every window from now on.
      slots: 2,
      join(cells, i, state) {
        if (state.n === 0) return;
        const newest = at(state, state.n - 1);
        // Every entry is kept (not only `limit`): a raised limit must still count them all.
        const n = state.n;
        if (Number.isNaN(cells[i]) || newest > (cells[i] as number)) cells[i] = newest;
        if (Number.isNaN(cells[i + 1]) || n > (cells[i + 1] as number)) cells[i + 1] = n;
      },
      read(cells, i) {
        if (Number.isNaN(cells[i])) return undefined;
        const n = Math.min(cells[i + 1] as number, limit);
        return { buf: new Array<number>(n).fill(cells[i] as number), head: 0, n };
      },
    },
    refund(s, now, cost, receipt) {
      const t = Math.max(now, s.n > 0 ? at(s, s.n - 1) : Number.NEGATIVE_INFINITY);
      if (receipt === undefined) {
        // The newest entries still counting go first (the ones this request added, if it was the last).
        let k = 0;
        while (k < cost && k < s.n && at(s, s.n - 1 - k) > t - W) k++;
        s.n -= k;
        return;
      }
      // With a receipt: only entries logged at that instant, and only while they still count
      // (entries of one instant are alike: removing any of them is removing this check's).
      if (!(receipt > t - W)) return;
      const kept: number[] = [];
      let removed = 0;
      for (let i = 0; i < s.n; i++) {
        const e = at(s, i);
        if (removed < cost && e === receipt) removed++;
        else kept.push(e);
      }
      if (removed === 0) return;
      s.buf = kept;
      s.head = 0;
      s.n = kept.length;
    },
    force(s, now, cost) {
      // Only the newest `limit` entries ever matter, so at most `limit` are kept (as step does).
      const t = Math.max(now, s.n > 0 ? at(s, s.n - 1) : Number.NEGATIVE_INFINITY);
      const take = Math.min(cost, limit);
      dropOldest(s, limit - take);
      append(s, t, take, limit);
    },
    step(s, now, cost, commit): Decision {
      const newest = s.n > 0 ? at(s, s.n - 1) : Number.NEGATIVE_INFINITY;
      // A clock that stepped back is read as "no time passed": the newest entry's time.
      const t = Math.max(now, newest);
      // Entries at or before t − W no longer count, and only the newest `limit` can matter (more
      // are kept after updateRule lowers the limit). They are skipped here and removed only when
      // a request commits: a peek or a denial at a later instant must not forget entries that a
      // clock stepping back would still count.
      let skip = Math.max(0, s.n - limit);
      while (skip < s.n && at(s, skip) <= t - W) skip++;
      const n = s.n - skip;
      const reset = n > 0 ? Math.ceil(newest + W - now) : 0;
      if (cost > limit) return decision(false, limit, limit - n, Number.POSITIVE_INFINITY, reset);
      if (n + cost > limit) {
        const oldest = at(s, skip + n + cost - limit - 1);
        return decision(false, limit, limit - n, Math.ceil(oldest + W - now), reset);
      }
      if (commit) {
        dropOldest(s, n);
        append(s, t, cost, limit);
      }
      // cost 0 (a composite reporting an unconsumed member) leaves the reset where it was.
      return decision(true, limit, limit - n - cost, 0, cost > 0 ? Math.ceil(t + W - now) : reset);
    },
  };
}

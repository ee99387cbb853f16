/**
 * Sliding log: the timestamp of every admitted unit in a ring buffer. Exact — never more than
 * `limit` in any rolling window — at O(limit) memory per key. Choose it where precision matters
 * more than memory and limits are small: login attempts, password resets, OTP sends.
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { AlgorithmSpec, SlidingLogSpec } from "./specs.ts";

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

/**
 * Appends `count` copies of `t`, growing the buffer when full: doubling, but not past `limit`
 * unless the entries themselves need more (leases held past a lowered limit, see liveLog).
 */
function append(s: SlidingLogState, t: number, count: number, limit: number): void {
  if (s.n + count > s.buf.length) {
    const size = Math.max(s.n + count, Math.min(limit, Math.max(s.buf.length * 2, 4)));
    const grown = new Array<number>(size);
    for (let i = 0; i < s.n; i++) grown[i] = at(s, i);
    s.buf = grown;
    s.head = 0;
  }
  for (let i = 0; i < count; i++) s.buf[(s.head + s.n + i) % s.buf.length] = t;
  s.n += count;
}

/**
 * Whether `m` keeps a sliding-log state (a sliding log, or the concurrency spec's leases, which
 * are the same log): stores encode, summarise and lay out both alike.
 */
export function isLog(m: { readonly kind: string }): boolean {
  return m.kind === "sliding-log" || m.kind === "concurrency";
}

/**
 * Removes up to `cost` entries logged at exactly `receipt` (entries of one instant are alike:
 * removing any of them is removing that check's); returns how many it removed.
 */
export function takeAt(s: SlidingLogState, receipt: number, cost: number): number {
  const kept: number[] = [];
  let removed = 0;
  for (let i = 0; i < s.n; i++) {
    const e = at(s, i);
    if (removed < cost && e === receipt) removed++;
    else kept.push(e);
  }
  if (removed === 0) return 0;
  s.buf = kept;
  s.head = 0;
  s.n = kept.length;
  return removed;
}

/**
 * The log's reading at `now`: `t` (now, or the newest entry's time when the clock stepped
 * back), the newest entry, and `skip`, the entries that no longer count, so `s.n − skip` count.
 * Entries at or before t − W never count. With `capped` (a sliding log) neither do those older
 * than the newest `limit`, kept after updateRule lowered the limit: a rate only ever needs the
 * newest `limit`. Leases are not capped: each is a request still in flight, which counts (and
 * can be renewed or released) until it leaves, whatever the limit became meanwhile.
 */
export function liveLog(
  s: SlidingLogState,
  now: number,
  limit: number,
  W: number,
  capped = true,
): [number, number, number] {
  const newest = s.n > 0 ? at(s, s.n - 1) : Number.NEGATIVE_INFINITY;
  // A clock that stepped back is read as "no time passed": the newest entry's time.
  const t = Math.max(now, newest);
  let skip = capped ? Math.max(0, s.n - limit) : 0;
  while (skip < s.n && at(s, skip) <= t - W) skip++;
  return [t, newest, skip];
}

/** How many of the counting entries (past `skip`) were logged at exactly `receipt`. */
export function countAt(s: SlidingLogState, skip: number, receipt: number): number {
  let k = 0;
  for (let i = skip; i < s.n; i++) if (at(s, i) === receipt) k++;
  return k;
}

/**
 * Places `count` entries at `t` in time order: appended when `t` is the newest (always, for a
 * sliding log), else inserted after the entries at or before it (a lease logged at its own
 * receipt, see concurrency.ts).
 */
function place(s: SlidingLogState, t: number, count: number, limit: number): void {
  if (s.n === 0 || at(s, s.n - 1) <= t) {
    append(s, t, count, limit);
    return;
  }
  const entries: number[] = [];
  for (let i = 0; i < s.n; i++) entries.push(at(s, i));
  let k = entries.length;
  while (k > 0 && (entries[k - 1] as number) > t) k--;
  entries.splice(k, 0, ...new Array<number>(count).fill(t));
  s.buf = entries;
  s.head = 0;
  s.n = entries.length;
}

/**
 * Drops what no longer counts (the first `skip`) and places `count` entries at `t` (≤ limit in
 * all); with `moved`, the receipt of `count` counting entries, those entries move to `t` instead
 * (a renewed lease: see concurrency.ts).
 */
export function commitLog(
  s: SlidingLogState,
  skip: number,
  t: number,
  count: number,
  limit: number,
  moved?: number,
): void {
  dropOldest(s, s.n - skip);
  if (moved !== undefined) takeAt(s, moved, count);
  place(s, t, count, limit);
}

/** Builds the sliding-log step for `spec`. */
export function slidingLog(spec: SlidingLogSpec): Algorithm<SlidingLogState> {
  return logAlgorithm(spec, spec.limit, spec.windowMs, "sliding-log");
}

/**
 * The log step for `limit` entries per `W` ms: a sliding log (`kind` "sliding-log"), and the
 * concurrency spec's leases (`kind` "concurrency", W = leaseMs; see concurrency.ts), which is
 * the same log read as "requests in flight": an entry counts from its acquisition until it is
 * released or W ms have passed.
 */
export function logAlgorithm(
  spec: AlgorithmSpec,
  limit: number,
  W: number,
  kind: "sliding-log" | "concurrency",
): Algorithm<SlidingLogState> {
  const leases = kind === "concurrency";
  return {
    kind,
    spec,
    limit,
    horizonMs: W,
    create: () => ({ buf: [], head: 0, n: 0 }),
    freshAt: (s) => (s.n > 0 ? at(s, s.n - 1) + W : Number.NEGATIVE_INFINITY),
    // A lease log reads the same under any leaseMs (its entries are receipts), so a new leaseMs
    // keeps the leases in flight; a rate's window is part of what its entries mean.
    shape: leases ? kind : `${kind}/${W}`,
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
      takeAt(s, receipt, cost);
    },
    force(s, now, cost) {
      const take = Math.min(cost, limit);
      if (leases) {
        // Held leases are never pushed out (each is a request in flight): the expired go, and the
        // penalty's units join the rest, at most `limit` of them (more could never change an answer
        // sooner than these expire).
        const [t, , skip] = liveLog(s, now, limit, W, false);
        dropOldest(s, s.n - skip);
        append(s, t, take, limit);
        return;
      }
      // Only the newest `limit` entries ever matter, so at most `limit` are kept (as step does).
      const t = Math.max(now, s.n > 0 ? at(s, s.n - 1) : Number.NEGATIVE_INFINITY);
      dropOldest(s, limit - take);
      append(s, t, take, limit);
    },
    step(s, now, cost, commit): Decision {
      // Entries that no longer count are skipped here and removed only when a request commits: a
      // peek or a denial at a later instant must not forget entries that a clock stepping back
      // would still count.
      const [t, newest, skip] = liveLog(s, now, limit, W, !leases);
      // More than `limit` leases are in flight only after updateRule lowered the limit: no slot is free.
      const n = s.n - skip;
      const free = Math.max(0, limit - n);
      const reset = n > 0 ? Math.ceil(newest + W - now) : 0;
      // (A cost above the limit never fits: n is never negative.)
      const allowed = n + cost <= limit;
      // A sliding log appends at t; a lease is logged at its receipt, `now` itself, even when
      // another process's clock logged a later one (so its release names it exactly).
      if (allowed && commit) commitLog(s, skip, leases ? now : t, cost, limit);
      // One Decision for every outcome, the refusal's retry a call away: V8 inlines each call
      // site's callees apart, and the step must stay small enough to inline on the hot path. cost
      // 0 (a composite reporting an unconsumed member) leaves the reset where it was.
      return decision(
        allowed,
        limit,
        allowed ? limit - n - cost : free,
        allowed ? 0 : retryAfter(s, skip, n, cost, now),
        allowed && cost > 0 ? Math.ceil(t + W - now) : reset,
      );
    },
  };

  /** ms until a refused `cost` fits, `n` entries counting past `skip` (never, for a cost above the limit). */
  function retryAfter(s: SlidingLogState, skip: number, n: number, cost: number, now: number): number {
    if (cost > limit) return Number.POSITIVE_INFINITY;
    return Math.ceil(at(s, skip + n + cost - limit - 1) + W - now);
  }
}

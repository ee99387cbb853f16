/**
 * How states are summarised in the capped store's last tier: each cell is a *sum* of the states
 * joined into it (counts added within one window, backlogs added on top of each other), so a
 * cell only grows by units that were really counted and dominates every key joined into it.
 * Nothing read back from a cell is ever joined again as if it were a key's own count (the
 * ratchet that made every cell read "full"); see memory/decide-approx.ts for how read-back keys join
 * only what they added since.
 *
 * Slots are float64s (NaN: empty). These functions work on any Float64Array, over an
 * ArrayBuffer or a SharedArrayBuffer.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import { leaseMsOf } from "../../algorithms/concurrency.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import type { GcraState } from "../../algorithms/gcra.ts";
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { SlidingWindowState } from "../../algorithms/sliding-window.ts";
import type { ConcurrencySpec, FixedWindowSpec, SlidingLogSpec, TokenBucketSpec } from "../../algorithms/specs.ts";
import type { TokenBucketState } from "../../algorithms/token-bucket.ts";
import type { BanPolicy, BanState } from "../../core/ban.ts";

/** Rounds an instant up past float noise, so sums of instants never admit what exact sums would not. */
function up(x: number): number {
  return x + Math.abs(x) * 2 ** -46 + 1e-6;
}

/** Whether the cell at `at` holds nothing yet (its first slot NaN). */
export const isEmpty = (cells: Float64Array, at: number) => Number.isNaN(cells[at] as number);

/** Float64 slots member `m` takes in a summary cell. */
export function memberSlots(m: Algorithm): number {
  switch (m.kind) {
    case "fixed-window":
      return 2;
    case "sliding-window":
      return 3;
    case "sliding-log":
    case "concurrency":
      return 5;
    default:
      return 1;
  }
}

/** Slots of the ban's state in a cell. */
export const BAN_SLOTS = 3;

/** Window length of a windowed member. */
// The concurrency spec's log has leaseMs for its window (it has no windowMs: reading that made
// every summarised lease NaN, read back as no lease at all).
export const windowOf = (m: Algorithm) =>
  m.kind === "concurrency"
    ? leaseMsOf(m.spec as ConcurrencySpec)
    : (m.spec as FixedWindowSpec | SlidingLogSpec).windowMs;

/** Counts of a (w, p, c)-like cell as seen from the later window `later` (W: the window length). */
export function shift(w: number, p: number, c: number, later: number, W: number): [number, number] {
  if (w === later) return [p, c];
  return w === later - W ? [c, 0] : [0, 0];
}

/** Adds `state` (member `m`'s, as of `now`) into the cell at `at`. */
export function joinMember(m: Algorithm, cells: Float64Array, at: number, state: unknown, now: number): void {
  switch (m.kind) {
    case "fixed-window": {
      const s = state as FixedWindowState;
      if (!(s.c > 0)) return;
      const w = cells[at] as number;
      if (Number.isNaN(w) || s.w > w) {
        cells[at] = s.w;
        cells[at + 1] = s.c;
      } else if (s.w === w) cells[at + 1] = (cells[at + 1] as number) + s.c;
      return; // an older window no longer counts
    }
    case "sliding-window": {
      const s = state as SlidingWindowState;
      if (!(s.p > 0 || s.c > 0)) return;
      const W = windowOf(m);
      if (isEmpty(cells, at)) {
        cells[at] = s.w;
        cells[at + 1] = s.p;
        cells[at + 2] = s.c;
        return;
      }
      const w = cells[at] as number;
      const later = Math.max(w, s.w);
      const [p1, c1] = shift(w, cells[at + 1] as number, cells[at + 2] as number, later, W);
      const [p2, c2] = shift(s.w, s.p, s.c, later, W);
      cells[at] = later;
      cells[at + 1] = p1 + p2;
      cells[at + 2] = c1 + c2;
      return;
    }
    case "sliding-log":
    case "concurrency": {
      const s = state as SlidingLogState;
      if (s.n === 0) return;
      const W = windowOf(m);
      const len = s.buf.length;
      const newest = s.buf[(s.head + s.n - 1) % len] as number;
      const ws = Math.floor(newest / W) * W;
      let p = 0;
      let pt = Number.NEGATIVE_INFINITY;
      let c = 0;
      let ct = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < s.n; i++) {
        const t = s.buf[(s.head + i) % len] as number;
        const b = Math.floor(t / W) * W;
        if (b >= ws) {
          c++;
          ct = Math.max(ct, t);
        } else if (b === ws - W) {
          p++;
          pt = Math.max(pt, t);
        } // older entries stopped counting before the newest was taken
      }
      joinLog(cells, at, W, ws, p, pt, c, ct);
      return;
    }
    case "token-bucket": {
      const s = state as TokenBucketState;
      const { capacity, refillPerSecond: r } = m.spec as TokenBucketSpec;
      const fullAt = s.t + (capacity * 1000 - s.b) / r;
      addBacklog(cells, at, fullAt, now);
      return;
    }
    default:
      addBacklog(cells, at, gcraInstant(state as GcraState), now);
  }
}

/** A gcra/leaky-bucket arrival time as one number of ms, rounded up (a later one admits less). */
function gcraInstant(s: GcraState): number {
  return s.ticks > 0 ? s.ms + 1 : s.ms;
}

/** Whether member `m` is rate-based (a backlog that drains: token bucket, gcra, leaky bucket). */
export function isRate(m: Algorithm): boolean {
  return m.kind === "token-bucket" || m.kind === "gcra" || m.kind === "leaky-bucket";
}

/** Milliseconds of backlog one unit adds to a rate-based member. */
export function unitMs(m: Algorithm): number {
  const spec = m.spec as { periodMs?: number; limit?: number; leakPerSecond?: number; refillPerSecond?: number };
  if (m.kind === "gcra") return (spec.periodMs as number) / (spec.limit as number);
  if (m.kind === "leaky-bucket") return 1000 / (spec.leakPerSecond as number);
  return 1000 / (spec.refillPerSecond as number);
}

/** The instant a rate-based state owes nothing any more (a token bucket full again; a gcra's tat). */
export function rateInstant(m: Algorithm, state: unknown): number {
  if (m.kind !== "token-bucket") return gcraInstant(state as GcraState);
  const s = state as TokenBucketState;
  const { capacity, refillPerSecond: r } = m.spec as TokenBucketSpec;
  return s.t + (capacity * 1000 - s.b) / r;
}

/**
 * Adds what a key read back from the summary took since (`own`, started fresh at the read-back,
 * and `debt`, the backlog its admissions added, in ms) into a rate-based cell. A backlog drains
 * once: the key's true instant is at most max(cell + debt, own's instant), since each admission
 * maps an instant x to max(x, now) + cost·T (max-plus linear); adding own's drained backlog on
 * top of the cell's would drain it twice.
 */
export function joinRateOwn(
  m: Algorithm,
  cells: Float64Array,
  at: number,
  own: unknown,
  debt: number,
  base: number,
): void {
  const cell = cells[at] as number;
  // `base`: the cell's instant when the key was read back (a freed or folded cell must not lose it).
  const from = Math.max(
    Number.isNaN(cell) ? Number.NEGATIVE_INFINITY : cell,
    Number.isNaN(base) ? Number.NEGATIVE_INFINITY : base,
  );
  const mine = rateInstant(m, own);
  const shifted = from === Number.NEGATIVE_INFINITY ? from : up(from + Math.max(0, debt));
  const next = Math.max(shifted, mine);
  if (next > Number.NEGATIVE_INFINITY) cells[at] = next;
}

/** Adds the backlog `until − now` on top of the cell's (an instant: full again / theoretical arrival). */
function addBacklog(cells: Float64Array, at: number, until: number, now: number): void {
  if (!(until > now)) return; // nothing owed any more
  const cell = cells[at] as number;
  cells[at] = Number.isNaN(cell) ? until : up(Math.max(cell, now) + (until - now));
}

/** Adds a log's (previous-window, current-window) counts and newest instants into a cell. */
function joinLog(cells: Float64Array, at: number, W: number, ws: number, p: number, pt: number, c: number, ct: number) {
  if (isEmpty(cells, at)) {
    cells.set([ws, p, pt, c, ct], at);
    return;
  }
  const w = cells[at] as number;
  const later = Math.max(w, ws);
  const view = (cw: number, cp: number, cpt: number, cc: number, cct: number): [number, number, number, number] => {
    if (cw === later) return [cp, cpt, cc, cct];
    if (cw === later - W) return [cc, cct, 0, Number.NEGATIVE_INFINITY];
    return [0, Number.NEGATIVE_INFINITY, 0, Number.NEGATIVE_INFINITY];
  };
  const [p1, pt1, c1, ct1] = view(
    w,
    cells[at + 1] as number,
    cells[at + 2] as number,
    cells[at + 3] as number,
    cells[at + 4] as number,
  );
  const [p2, pt2, c2, ct2] = view(ws, p, pt, c, ct);
  cells.set([later, p1 + p2, Math.max(pt1, pt2), c1 + c2, Math.max(ct1, ct2)], at);
}

/**
 * A state equivalent to (dominating) the cell at `at`, or undefined when it is empty. A sliding
 * log is read back with at most `cap` entries (the newest matter; pass the current limit).
 */
export function readMember(m: Algorithm, cells: Float64Array, at: number, cap: number): unknown {
  if (isEmpty(cells, at)) return undefined;
  const a = cells[at] as number;
  switch (m.kind) {
    case "fixed-window":
      return { w: a, c: cells[at + 1] as number } satisfies FixedWindowState;
    case "sliding-window":
      return { w: a, p: cells[at + 1] as number, c: cells[at + 2] as number } satisfies SlidingWindowState;
    case "sliding-log":
    case "concurrency": {
      const c = Math.min(cells[at + 3] as number, cap);
      const p = Math.min(cells[at + 1] as number, cap - c);
      const buf = new Array<number>(p + c);
      buf.fill(cells[at + 2] as number, 0, p);
      buf.fill(cells[at + 4] as number, p);
      return { buf, head: 0, n: p + c } satisfies SlidingLogState;
    }
    case "token-bucket": {
      const { capacity, refillPerSecond: r } = m.spec as TokenBucketSpec;
      // Empty until `fullAt − capacity/r`, then refilling: never more than the keys it stands for.
      return { b: 0, t: up(a - (capacity * 1000) / r) } satisfies TokenBucketState;
    }
    default:
      // Whole ms (rounded up: later admits less), so the rule's tick size does not matter.
      return { ms: Math.ceil(up(a)), ticks: 0, den: 1 } satisfies GcraState;
  }
}

/** When the cell at `at` stops mattering (−Infinity for an empty one). */
export function memberFreshAt(m: Algorithm, cells: Float64Array, at: number): number {
  if (isEmpty(cells, at)) return Number.NEGATIVE_INFINITY;
  const a = cells[at] as number;
  switch (m.kind) {
    case "fixed-window":
      return a + windowOf(m);
    case "sliding-window": {
      const W = windowOf(m);
      return (cells[at + 2] as number) > 0 ? a + 2 * W : (cells[at + 1] as number) > 0 ? a + W : a;
    }
    case "sliding-log":
    case "concurrency": {
      const W = windowOf(m);
      return Math.max(cells[at + 4] as number, cells[at + 2] as number) + W;
    }
    default:
      return a;
  }
}

/** Adds a ban state: the later ban; denial counts of overlapping spans add up (never overwritten). */
export function joinBan(cells: Float64Array, at: number, ban: BanState, policy: BanPolicy): void {
  const until = cells[at + 2] as number;
  if (ban.until > Number.NEGATIVE_INFINITY && (Number.isNaN(until) || ban.until > until)) cells[at + 2] = ban.until;
  if (!(ban.n > 0)) {
    if (Number.isNaN(cells[at] as number)) cells[at + 1] = 0;
    return;
  }
  const since = cells[at] as number;
  if (Number.isNaN(since) || !((cells[at + 1] as number) > 0) || ban.since >= since + policy.withinMs) {
    // Every span counted before ended by this one's start: they no longer count.
    cells[at] = ban.since;
    cells[at + 1] = ban.n;
  } else if (ban.since + policy.withinMs > since) {
    cells[at] = Math.max(since, ban.since);
    cells[at + 1] = (cells[at + 1] as number) + ban.n;
  } // else: this span ended before the cell's latest began
}

/** The ban state a cell holds (a fresh one when nothing was joined). */
export function readBan(cells: Float64Array, at: number): BanState {
  const since = cells[at] as number;
  const until = cells[at + 2] as number;
  const n = cells[at + 1] as number;
  return {
    since: Number.isNaN(since) ? Number.NEGATIVE_INFINITY : since,
    n: Number.isNaN(since) || Number.isNaN(n) ? 0 : n,
    until: Number.isNaN(until) ? Number.NEGATIVE_INFINITY : until,
  };
}

/** When a ban cell stops mattering. */
export function banCellFreshAt(cells: Float64Array, at: number, policy: BanPolicy): number {
  const b = readBan(cells, at);
  return Math.max(b.until, b.n > 0 ? b.since + policy.withinMs : Number.NEGATIVE_INFINITY);
}

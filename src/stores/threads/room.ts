/**
 * Room in a full bucket, and pinned resets. Both work on a thread's private draft of a bucket
 * (shared-table.ts), so nothing here is visible to other threads until the draft is published.
 *
 * A full bucket first drops this rule's records that have been fresh for `RECLAIM_MARGIN_MS`
 * (summary.ts: a thread whose clock is behind may still count them; nothing to keep), then
 * gives up one entry: that record is joined into its rule's summary first, so no key ever
 * passes its limit. The entry given up is the oldest that is not returning (bucket.ts
 * RETURNING: its key came back after another key arrived in the bucket), so a flood of keys
 * that come once, or spend their limit in one burst and leave, churns through the entries
 * without returning keys while those stay exact (a segmented FIFO, per bucket, like
 * MemoryStore's segmented tiers). Returning entries are protected up to `MAX_RETURNING` of the
 * bucket; past that, or when every entry is returning, the oldest returning entry goes.
 *
 * Pins make a reset exact even for a summarised key: the summary cannot forget one key (its
 * cells are shared), so `reset` stores a fresh record flagged PINNED, and a pinned entry is
 * never dropped or given up while the summary still holds live state for its key. Pins are
 * bounded (`MAX_PINS` per bucket of 8, so a bucket always has an entry it can give up) and live
 * in the table, so they are counted in its fixed budget.
 */

import { decideRule } from "../../core/decide-rule.ts";
import { recordFreshAt } from "../../core/rule.ts";
import { BUCKET_SLOTS, PINNED, RETURNING, removeEntry, stateAt, tableOfTag } from "../compact/bucket.ts";
import type { SharedTable } from "../compact/shared-table.ts";
import type { RuleView } from "./rule-view.ts";
import { RECLAIM_MARGIN_MS, type Summary } from "./summary.ts";

/** Pinned entries a bucket may hold. */
export const MAX_PINS = BUCKET_SLOTS / 2;
/**
 * Returning entries a full bucket protects: the last entry is where new keys wait to come back.
 * Seven, not six: under many rules a client's records are many times `maxKeys`, and a bucket of
 * seven returning records gave one up to every arrival (bench/threads-flood.mjs, BENCH_RULES=50:
 * 1.7% of honest requests refused with six).
 */
export const MAX_RETURNING = BUCKET_SLOTS - 1;

/** What room-making needs from its store. */
export interface RoomContext {
  table: SharedTable;
  summary: Summary;
  /** Rule `index` as currently published. */
  view(index: number): RuleView;
}

/**
 * Whether the entry at `o` (a u32 index) is pinned and still needs to be: for entries of rule
 * `index` (table index − 1), while the summary holds live state for the key at `now`; entries of
 * other rules (whose instants may come from other clocks) count as live.
 */
function livePin(ctx: RoomContext, o: number, index: number, now: number): boolean {
  const u32 = ctx.table.u32;
  const tag = u32[o + 1] as number;
  if ((tag & PINNED) === 0) return false;
  const rule = tableOfTag(tag) - 1;
  if (rule !== index) return true;
  const h1 = u32[o] as number;
  const h2 = (tag & 0xffff0000) >>> 0;
  if (ctx.summary.read(rule, h1, h2, now, ctx.view(rule).codec) !== undefined) return true;
  u32[o + 1] = tag & ~PINNED; // the state it shadowed is gone: an ordinary entry from now on
  return false;
}

/**
 * Frees at least one entry of the full draft at `dst`. Returns the new count, or -1 when the
 * summary had no room for the entry given up (then nothing may be dropped).
 */
export function makeRoom(ctx: RoomContext, dst: number, index: number, now: number): number {
  const { u32, f64, E } = ctx.table;
  let count = BUCKET_SLOTS;
  const { rule, codec } = ctx.view(index);
  for (let e = 0; e < count; ) {
    const o = dst + e * E;
    if (
      tableOfTag(u32[o + 1] as number) === index + 1 &&
      !livePin(ctx, o, index, now) &&
      !liveBlock(ctx, dst, e, index, now) &&
      // Fresh by a margin, not just at this thread's instant: a thread whose clock is behind
      // (or that read it before a stall) may still count the record's units; within the margin
      // the record is summarised like any other victim instead (over-counts, never forgets).
      recordFreshAt(rule, codec.decode(f64, stateAt(dst, E, e))) + RECLAIM_MARGIN_MS <= now
    ) {
      removeEntry(u32, dst, E, e, count);
      count--;
    } else e++;
  }
  if (count < BUCKET_SLOTS) return count;
  const chosen = victimOf(ctx, dst, count, index, now);
  if (chosen < 0) return -1; // every entry pinned or blocked: nothing may be dropped
  const victim = chosen & ~SPENT_VICTIM;
  const o = dst + victim * E;
  const tag = u32[o + 1] as number;
  const owner = tableOfTag(tag) - 1;
  const view = ctx.view(owner);
  const record = view.codec.decode(f64, stateAt(dst, E, victim));
  const joined = ctx.summary.join(
    owner,
    u32[o] as number,
    (tag & 0xffff0000) >>> 0,
    record,
    recordFreshAt(view.rule, record),
    view.codec,
    now,
    index,
    (chosen & SPENT_VICTIM) !== 0,
  );
  if (!joined) return -1;
  removeEntry(u32, dst, E, victim, count);
  return count - 1;
}

/** Set in `victimOf`'s answer when the entry is spent (summary.ts joins it into the spent cells). */
const SPENT_VICTIM = 0x100;

/**
 * The entry of the full draft at `dst` to give up (with `SPENT_VICTIM` set when it is spent): the oldest that may go (neither pinned nor
 * holding a running block, which the summary could not keep) and is not returning, unless more
 * than MAX_RETURNING that may go are returning or none is not: then the oldest returning. -1
 * when no entry may go. Before all of those, a spent one (it would refuse one more unit, judged
 * at an instant of its own rule's clock: summary.ts `instantOf`), returning or not, goes first
 * (a flood key spending its limit through many rules comes back to each between its requests,
 * and is marked returning): read back from the summary, which counts at least its own state, it is refused all the
 * same, while a key with room left that is summarised among spent keys is read back
 * over-counted. A flood of keys spending their whole limit then pushes out its own keys, not the
 * honest keys waiting to come back (test/threads/flood-cliff.test.ts).
 */
function victimOf(ctx: RoomContext, dst: number, count: number, index: number, now: number): number {
  const { u32, E } = ctx.table;
  let probation = -1;
  let spent = -1;
  let returning = -1;
  let returned = 0;
  for (let e = 0; e < count; e++) {
    const o = dst + e * E;
    if (livePin(ctx, o, index, now) || liveBlock(ctx, dst, e, index, now)) continue;
    const tag = u32[o + 1] as number;
    if (spent < 0 && isSpent(ctx, tableOfTag(tag) - 1, stateAt(dst, E, e), index, now)) spent = e;
    if ((tag & RETURNING) === 0) {
      if (probation < 0) probation = e;
    } else {
      returned++;
      if (returning < 0) returning = e;
    }
  }
  if (spent >= 0) return spent | SPENT_VICTIM;
  if (probation < 0 || returned > MAX_RETURNING) return returning;
  return probation;
}

/** Whether the record at `f64[at]` of rule `owner` would refuse one more unit now (on its clock; false when unknown). */
function isSpent(ctx: RoomContext, owner: number, at: number, index: number, now: number): boolean {
  const instant = owner === index ? now : ctx.summary.instantOf(owner, now, index);
  if (instant === Number.NEGATIVE_INFINITY) return false;
  const { rule, codec } = ctx.view(owner);
  return !decideRule(rule, codec.decode(ctx.table.f64, at), instant, 1, "peek").allowed;
}

/**
 * Whether entry `e` of the draft at `dst` holds a block running at `now` (for entries of rule
 * `index`; entries of other rules, whose instants may come from other clocks, count as running).
 */
function liveBlock(ctx: RoomContext, dst: number, e: number, index: number, now: number): boolean {
  const { u32, f64, E } = ctx.table;
  const owner = tableOfTag(u32[dst + e * E + 1] as number) - 1;
  const at = ctx.view(owner).codec.blockAt;
  if (at < 0) return false;
  const until = f64[stateAt(dst, E, e) + at] as number;
  return owner === index ? until > now : until > Number.NEGATIVE_INFINITY;
}

/** Whether the draft at `dst` (holding `count` entries) may take one more pin. */
export function mayPin(ctx: RoomContext, dst: number, count: number, index: number, now: number): boolean {
  let pins = 0;
  for (let e = 0; e < count; e++) if (livePin(ctx, dst + e * ctx.table.E, index, now)) pins++;
  return pins < MAX_PINS;
}

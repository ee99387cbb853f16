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
 * MemoryStore's segmented tiers). Returning entries are protected while any entry that may go
 * is not returning; when every one is, the oldest returning entry goes.
 *
 * Entries are as wide as their rule (compact/shared-bucket.ts), so a bucket is full when the new
 * entry's words do not fit: as many entries are given up as it takes.
 *
 * Pins make a reset exact even for a summarised key: the summary cannot forget one key (its
 * cells are shared), so `reset` stores a fresh record flagged PINNED, and a pinned entry is
 * never dropped or given up while the summary still holds live state for its key. Pins are
 * bounded (`MAX_PINS` per bucket, at most half its words, so a bucket always has room it can give up) and live
 * in the table, so they are counted in its fixed budget.
 */

import { decideRule } from "../../core/decide-rule.ts";
import { recordFreshAt } from "../../core/rule.ts";
import { BUCKET_SLOTS, PINNED, RETURNING, tableOfTag } from "../compact/bucket.ts";
import { entrySize, H2_KEPT, removeWide, stateOf, widthOfTag } from "../compact/shared-bucket.ts";
import type { SharedTable } from "../compact/shared-table.ts";
import type { RuleView } from "./rule-view.ts";
import { RECLAIM_MARGIN_MS, type Summary } from "./summary.ts";

/** Pinned entries a bucket may hold (each at most an eighth of its words). */
export const MAX_PINS = BUCKET_SLOTS / 2;

/** What room-making needs from its store. */
export interface RoomContext {
  table: SharedTable;
  summary: Summary;
  /** Rule `index` as currently published. */
  view(index: number): RuleView;
}

/** The codec of the entry at `u32[o]` (its owner's, at the entry's width). */
function codecOf(ctx: RoomContext, o: number) {
  const tag = ctx.table.u32[o + 1] as number;
  return ctx.view(tableOfTag(tag) - 1).codecAt(widthOfTag(tag, ctx.table.R));
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
  const h2 = (tag & H2_KEPT) >>> 0;
  if (ctx.summary.read(rule, h1, h2, now, ctx.view(rule).codec) !== undefined) return true;
  u32[o + 1] = tag & ~PINNED; // the state it shadowed is gone: an ordinary entry from now on
  return false;
}

/**
 * Frees room for an entry of `need` Int32 words in the draft at `dst`, whose entries take `used`
 * words. Returns the words in use then, or -1 when the summary had no room for an entry given up
 * (then nothing may be dropped: the draft is not published).
 */
export function makeRoom(
  ctx: RoomContext,
  dst: number,
  used: number,
  need: number,
  index: number,
  now: number,
): number {
  const { u32, f64, R, cap } = ctx.table;
  const { rule } = ctx.view(index);
  for (let o = dst; o < dst + used; ) {
    if (
      tableOfTag(u32[o + 1] as number) === index + 1 &&
      !livePin(ctx, o, index, now) &&
      !liveBlock(ctx, o, index, now) &&
      // Fresh by a margin, not just at this thread's instant: a thread whose clock is behind
      // (or that read it before a stall) may still count the record's units; within the margin
      // the record is summarised like any other victim instead (over-counts, never forgets).
      recordFreshAt(rule, codecOf(ctx, o).decode(f64, stateOf(o))) + RECLAIM_MARGIN_MS <= now
    ) {
      used = removeWide(u32, dst, used, o, R);
    } else o += entrySize(u32, o, R);
  }
  while (used + need > cap) {
    const o = victimOf(ctx, dst, used, index, now);
    if (o < 0) return -1; // every entry pinned or blocked: nothing may be dropped
    const tag = u32[o + 1] as number;
    const owner = tableOfTag(tag) - 1;
    const view = ctx.view(owner);
    const record = view.codecAt(widthOfTag(tag, R)).decode(f64, stateOf(o));
    const joined = ctx.summary.join(
      owner,
      u32[o] as number,
      (tag & H2_KEPT) >>> 0,
      record,
      recordFreshAt(view.rule, record),
      view.codec,
      now,
      index,
      victimSpent,
    );
    if (!joined) return -1;
    used = removeWide(u32, dst, used, o, R);
  }
  return used;
}

/** Whether the entry `victimOf` last chose is spent (summary.ts joins it into the spent cells). */
let victimSpent = false;

/**
 * The entry of the full draft at `dst` (u32 index; `victimSpent` set when it is spent) to give
 * up: the oldest that may go (neither pinned nor holding a running block, which the summary
 * could not keep) and is not returning, unless none is not: then the oldest returning. -1
 * when no entry may go. Before all of those, a spent one (it would refuse one more unit, judged
 * at an instant of its own rule's clock: summary.ts `instantOf`), returning or not, goes first
 * (a flood key spending its limit through many rules comes back to each between its requests,
 * and is marked returning): read back from the summary, which counts at least its own state, it is refused all the
 * same, while a key with room left that is summarised among spent keys is read back
 * over-counted. A flood of keys spending their whole limit then pushes out its own keys, not the
 * honest keys waiting to come back (test/threads/flood-cliff.test.ts).
 */
function victimOf(ctx: RoomContext, dst: number, used: number, index: number, now: number): number {
  const { u32, R } = ctx.table;
  let probation = -1;
  let spent = -1;
  let returning = -1;
  for (let o = dst; o < dst + used; o += entrySize(u32, o, R)) {
    if (livePin(ctx, o, index, now) || liveBlock(ctx, o, index, now)) continue;
    const tag = u32[o + 1] as number;
    if (spent < 0 && isSpent(ctx, o, index, now)) spent = o;
    if ((tag & RETURNING) === 0) {
      if (probation < 0) probation = o;
    } else if (returning < 0) returning = o;
  }
  victimSpent = spent >= 0;
  if (spent >= 0) return spent;
  return probation < 0 ? returning : probation;
}

/** Whether the entry at `u32[o]` would refuse one more unit now (on its rule's clock; false when unknown). */
function isSpent(ctx: RoomContext, o: number, index: number, now: number): boolean {
  const owner = tableOfTag(ctx.table.u32[o + 1] as number) - 1;
  const instant = owner === index ? now : ctx.summary.instantOf(owner, now, index);
  if (instant === Number.NEGATIVE_INFINITY) return false;
  const { rule } = ctx.view(owner);
  return !decideRule(rule, codecOf(ctx, o).decode(ctx.table.f64, stateOf(o)), instant, 1, "peek").allowed;
}

/**
 * Whether the entry at `u32[o]` holds a block running at `now` (for entries of rule `index`;
 * entries of other rules, whose instants may come from other clocks, count as running).
 */
function liveBlock(ctx: RoomContext, o: number, index: number, now: number): boolean {
  const owner = tableOfTag(ctx.table.u32[o + 1] as number) - 1;
  const at = codecOf(ctx, o).blockAt;
  if (at < 0) return false;
  const until = ctx.table.f64[stateOf(o) + at] as number;
  return owner === index ? until > now : until > Number.NEGATIVE_INFINITY;
}

/** Whether the draft at `dst` (its entries taking `used` words) may take one more pin. */
export function mayPin(ctx: RoomContext, dst: number, used: number, index: number, now: number): boolean {
  const { u32, R } = ctx.table;
  let pins = 0;
  for (let o = dst; o < dst + used; o += entrySize(u32, o, R)) if (livePin(ctx, o, index, now)) pins++;
  return pins < MAX_PINS;
}

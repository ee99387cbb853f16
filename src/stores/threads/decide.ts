/**
 * One operation on one key of a SharedMemoryStore, lock-free: read the key's bucket, decode its
 * record (or read it back from the summary, or start fresh), run `decideRule` (the one decision
 * path of every store) on it, and, when the record changed, draft the bucket with the new
 * record and publish it with one compare-and-swap (compact/shared-table.ts); if another thread
 * published first, decide again from the new state. A decision that writes nothing is validated
 * by the bucket word being unchanged, and linearised there.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { blocksBeside, decideBlocked } from "../../core/block.ts";
import {
  changesStoredRecord,
  decideCheck,
  decideRule,
  type Operation,
  storesNewRecord,
} from "../../core/decide-rule.ts";
import { ConfigError, StoreError } from "../../core/errors.ts";
import { banState, type CompiledRule, createRecord, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import { bucketOf, PINNED, RETURNING } from "../compact/bucket.ts";
import {
  appendWide,
  entrySize,
  H2_KEPT,
  KEY_TAG,
  READ_BACK,
  removeWide,
  stateOf,
  usedWords,
  wideTag,
  widthOfTag,
} from "../compact/shared-bucket.ts";
import { NO_FREE_BLOCK } from "../compact/shared-table.ts";
import { recordWordsOf } from "./codec.ts";
import { H } from "./layout.ts";
import { mostPermissive } from "./read-back.ts";
import { makeRoom, mayPin, type RoomContext } from "./room.ts";
import type { RuleView } from "./rule-view.ts";

/** What a decision works on: the table, the summary, the rules, the shared counters. */
export interface DecideContext extends RoomContext {
  /** The header's counters. */
  I: Int32Array;
  /** Buckets of the table. */
  buckets: number;
  /** The key's fingerprint (compact/fingerprint.ts), filled by the caller. */
  h: Uint32Array;
  /** Notes that a block on a key of rule `index` runs until `until` (registry.ts `noteBlock`). */
  noteBlock(index: number, until: number): void;
}

/**
 * `op` on the key whose fingerprint is in `ctx.h`, under rule `index`. `reset` returns undefined;
 * `receipt` is a refund's receipt (the instant its check was decided).
 */
export function decide(
  ctx: DecideContext,
  view: RuleView,
  index: number,
  cost: number,
  now: number,
  op: Operation | "reset",
  receipt?: number,
): Decision | undefined {
  if (op === "check") {
    const result = checkStored(ctx, view, index, cost, now);
    if (result !== undefined) return result;
  }
  return decideAny(ctx, view, index, cost, now, op, receipt);
}

/**
 * `decide(ctx, view, index, 1, now, "check")`: the limiter's fast lane (a one-unit check) calls
 * it directly, one frame fewer than through `decide` (callgrind: −47 instructions a decision).
 */
export function checkOne(ctx: DecideContext, view: RuleView, index: number, now: number): Decision {
  return checkStored(ctx, view, index, 1, now) ?? (decideAny(ctx, view, index, 1, now, "check") as Decision);
}

/**
 * A check of a key the table holds and no block holds: most decisions. It is `decideAny`'s path
 * for that case with the cases that cannot arise left out (no summary, pin, room to make or
 * block to keep), so the function stays small enough for V8 to inline what it calls. Returns
 * undefined, having changed nothing, when the key is not in the table or is blocked: `decideAny`
 * then decides (and reads the bucket again).
 */
function checkStored(
  ctx: DecideContext,
  view: RuleView,
  index: number,
  cost: number,
  now: number,
): Decision | undefined {
  const { table, h } = ctx;
  const { rule } = view;
  const h1 = h[0] as number;
  // The key's tag with its rule's width (shared-bucket.ts), built inline: this path runs on most
  // decisions. The scan takes only an entry of that width; one of another (written before the
  // rule's limits changed) goes to decideAny, which reads it at its width.
  const tag = (((h[1] as number) & H2_KEPT) | view.tagBits | (index + 1)) >>> 0;
  const bucket = bucketOf(index + 1, h[2] as number, ctx.buckets);
  const f64 = table.f64;
  const codec = view.codec;
  for (;;) {
    // The bucket word read, the key looked up and its bucket drafted (shared-word.wat): the
    // Float64 index of its state in this thread's draft, decided on and updated in place there.
    const at = table.take(bucket, h1, tag);
    if (at < 0) return undefined;
    // A record read back from the summary (its entry's READ_BACK bit, in the draft's tag just
    // before its state) decides elsewhere, as does a running block (core/block.ts; NaN, a torn
    // read, is no block here either).
    if (((table.u32[2 * at - 1] as number) & READ_BACK) !== 0) return undefined;
    if (codec.blockAt >= 0 && (f64[at + codec.blockAt] as number) > now) return undefined;
    const record = codec.load(f64, at);
    // decideRule's check, without its test of the operation.
    const result = decideCheck(rule, record, now, cost);
    // A denial changes the record only when it counts toward a ban (decideAny's rule,
    // `storesNewRecord`, for a check).
    if (!result.allowed && rule.ban === undefined) {
      if (table.unchanged()) return result;
      continue;
    }
    codec.encode(record, f64, at);
    if (codec.blockAt >= 0) f64[at + codec.blockAt] = Number.NEGATIVE_INFINITY;
    if (table.publish()) return result;
  }
}

/** `decide` for every operation and case (`checkStored` is its common case). */
function decideAny(
  ctx: DecideContext,
  view: RuleView,
  index: number,
  cost: number,
  now: number,
  op: Operation | "reset",
  receipt?: number,
): Decision | undefined {
  const { table, summary, h } = ctx;
  const { u32, f64, R, cap } = table;
  const { rule } = view;
  const h1 = h[0] as number;
  // The fingerprint bits an entry's tag keeps: the summary is read and joined with the same (room.ts).
  const h2 = ((h[1] as number) & H2_KEPT) >>> 0;
  const tag = wideTag(h2, index + 1, view.width, R);
  const bucket = bucketOf(index + 1, h[2] as number, ctx.buckets);
  for (;;) {
    // The key's entry and the bucket's entries in use, in one pass (the draft copies those).
    const at = table.lookup(bucket, h1, (tag & KEY_TAG) >>> 0);
    const found = table.entry;
    const words = table.words;
    let codec = view.codec;
    // The key's entry is narrower than the rule's records now are (a limit raised since): it is
    // read at its width and written again at the rule's, in the same bucket and publish.
    let narrow = false;
    let record: RuleRecord;
    let summarised = false;
    // Whether the key's record is a bound read back from the summary and still not fresh
    // (shared-bucket.ts READ_BACK): its decisions say approximate, and its entry keeps the mark.
    let bound = false;
    // Whether the key's entry holds the mark and its record is fresh now: the mark goes.
    let settled = false;
    // When a block ends (core/block.ts; NaN or -Infinity: none), kept in a spare record word.
    let until = Number.NEGATIVE_INFINITY;
    if (at >= 0) {
      const width = widthOfTag(u32[2 * at - 1] as number, R);
      if (width !== view.width) {
        codec = view.codecAt(width);
        narrow = width < view.width;
      }
      record = codec.load(f64, at);
      if (codec.blockAt >= 0) until = f64[at + codec.blockAt] as number;
      if (((u32[2 * at - 1] as number) & READ_BACK) !== 0) {
        // Judged before the operation, as core/ban.ts `settleReadBack` judges a ban's mark: once
        // nothing it over-counted still counts, the record is the key's own state again.
        bound = recordFreshAt(rule, record) > now;
        settled = !bound;
      }
    } else {
      const rows = summary.read(index, h1, h2, now, codec);
      summarised = rows !== undefined;
      record = rows === undefined ? createRecord(rule) : mostPermissive(rule, rows, now, cost);
      bound = summarised;
    }
    let result: Decision | undefined;
    let pin = false;
    if (op === "reset") {
      // The summary cannot forget one key: a key it still holds state for gets a pinned fresh record.
      pin = summarised || (found >= 0 && summary.read(index, h1, h2, now, codec) !== undefined);
      if (!pin && found < 0) {
        if (table.unchanged()) return undefined;
        continue;
      }
      record = createRecord(rule);
      until = Number.NEGATIVE_INFINITY;
      bound = false;
    } else {
      if (op === "block" && blocksBeside(rule)) {
        if (codec.blockAt < 0) throw noBlockWord(rule);
        until = now + cost;
        // Before it is published: a rule update that would leave no word for it is refused until then.
        ctx.noteBlock(index, until);
      }
      result =
        until > now
          ? decideBlocked(rule, record, now, cost, op, until, receipt)
          : decideRule(rule, record, now, cost, op, receipt);
      if (bound || heldReadBack(rule, record)) result.approximate = true;
      let write: boolean;
      // A get reports, like a peek; a penalty and a block always change the record.
      if (summarised) write = op !== "peek" && op !== "get";
      // A stored record changes when a fresh one would be stored, on every refund and release,
      // and on a held renewal; and a mark that settled goes, or a later decision (the record no
      // longer fresh by then) would take it for a bound still.
      else if (found >= 0) write = settled || changesStoredRecord(rule, op, result);
      else write = op !== "peek" && op !== "get" && storesNewRecord(rule, op, result);
      if (!write) {
        if (table.unchanged()) return counted(ctx, result);
        continue;
      }
    }
    const dst = table.draft(words);
    if (dst < 0) throw noFreeBlock();
    let used = table.used;
    let evicted = 0;
    let o = found < 0 ? -1 : dst + found;
    // A check of a key that came back after another key arrived in its bucket marks it returning,
    // as `checkStored`'s draft does (shared-word.wat `take`): a key read back from the summary
    // decides here, and must keep the protection a returning key has (threads/room.ts).
    if (op === "check" && o >= 0 && o + entrySize(u32, o, R) < dst + used) {
      u32[o + 1] = ((u32[o + 1] as number) | RETURNING) >>> 0;
    }
    if (op === "reset" && !pin) {
      // forget: nothing shadows the key
      removeWide(u32, dst, used, o, R);
      o = -1;
    } else if (o < 0 || narrow) {
      let kept = 0;
      if (o >= 0) {
        kept = (u32[o + 1] as number) & (PINNED | RETURNING);
        used = removeWide(u32, dst, used, o, R);
      }
      const need = 2 + 2 * view.width;
      if (used + need > cap) {
        // Room-making reads every entry of the draft (which rule, pinned, returning): the copy
        // is whole only if no thread published meanwhile (a block is recycled only after the
        // word that named it moved), so a torn copy is never read as entries.
        if (!table.unchanged()) continue;
        const before = usedWords(u32, dst, used, R).entries;
        const made = makeRoom(ctx, dst, used, need, index, now);
        if (made < 0) {
          // A block answered but not kept would be lifted at the key's next check: say so.
          if (op === "block" && blocksBeside(rule)) throw noRoomForBlock(rule);
          return unplaced(ctx, result);
        }
        used = made;
        evicted = before - usedWords(u32, dst, used, R).entries;
      }
      o = appendWide(u32, dst, cap, used, h1, (tag | kept) >>> 0, R);
      used += need;
      codec = view.codec;
    }
    if (o >= 0) {
      const state = stateOf(o);
      const t = u32[o + 1] as number;
      u32[o + 1] = (bound ? t | READ_BACK : t & ~READ_BACK) >>> 0;
      codec.encode(record, f64, state);
      if (codec.blockAt >= 0) f64[state + codec.blockAt] = until > now ? until : Number.NEGATIVE_INFINITY;
      if (pin) {
        // Bounded: past MAX_PINS the record is fresh but unpinned (counted, see docs/threads.md).
        if (((u32[o + 1] as number) & PINNED) === 0) {
          if (mayPin(ctx, dst, used, index, now)) u32[o + 1] = (u32[o + 1] as number) | PINNED;
          else Atomics.add(ctx.I, H.unpinned, 1);
        }
      }
    }
    if (table.publish()) {
      if (evicted > 0) Atomics.add(ctx.I, H.evicted, evicted);
      return result === undefined ? undefined : counted(ctx, result);
    }
  }
}

/**
 * Whether `record`, just decided on, is still one read back from the summary by its ban state
 * (marked so, read-back.ts; `decideRule` clears the mark once the record is fresh): it stands
 * for a bound of the key's state, not the state (a sliding log's entries all at its newest, so
 * a refund by receipt of an older entry finds nothing to give back), and decisions from it say
 * `approximate` as MemoryStore's from a bound do (SPEC §10). The entry's READ_BACK bit says the
 * same for every rule (`decideAny`); this is the ban's own copy of the mark.
 */
function heldReadBack(rule: CompiledRule, record: RuleRecord): boolean {
  return rule.ban !== undefined && banState(rule, record)?.readBack === true;
}

/** The block pool is exhausted. */
function noFreeBlock(): StoreError {
  return new StoreError(NO_FREE_BLOCK);
}

/** A block on a rule whose records have no spare word for it (see Codec.blockAt). */
function noBlockWord(rule: CompiledRule): ConfigError {
  const needed = recordWordsOf(rule) + 1;
  return new ConfigError(
    "recordWords",
    `SharedMemoryStore: a block on rule ${rule.shape} needs a spare word per key (${needed} words) and the ` +
      `store holds ${needed - 1}; create the store with \`recordWords: ${needed}\` or more, or give the rule a \`ban\``,
    needed,
  );
}

/**
 * A rule update (or binding) whose records would have no word left for the blocks still running
 * on keys of the rule until `until` (they would be lifted at once): refused until they end.
 */
export function blockWordTaken(rule: CompiledRule, recordWords: number, until: number): ConfigError {
  const needed = recordWordsOf(rule) + 1;
  return new ConfigError(
    "recordWords",
    `SharedMemoryStore: rule ${rule.shape} with these limits needs all ${recordWords} words of a key's record, ` +
      `leaving none for the blocks that run on its keys until ${new Date(until).toISOString()}; ` +
      `create the store with \`recordWords: ${needed}\` or more, or change the rule once those blocks end`,
    needed,
  );
}

/** A block whose bucket has no entry to give up (every one holds a running block or a pin). */
function noRoomForBlock(rule: CompiledRule): StoreError {
  return new StoreError(
    `SharedMemoryStore: no room to keep a block on rule ${rule.shape} (every entry of the key's bucket holds a running block or a pin); create the store with a larger \`maxKeys\``,
  );
}

/** Counts an approximate decision in the shared counters. */
function counted(ctx: DecideContext, result: Decision): Decision {
  if (result.approximate === true) {
    Atomics.add(ctx.I, H.approximate, 1);
    if (!result.allowed) Atomics.add(ctx.I, H.refused, 1);
  }
  return result;
}

/**
 * A key that could be neither stored nor summarised (the summary pool is exhausted): nothing is
 * recorded, so an admission could not be counted and the check is denied (conservative).
 */
function unplaced(ctx: DecideContext, result: Decision | undefined): Decision | undefined {
  Atomics.add(ctx.I, H.unsummarised, 1);
  if (result === undefined || !result.allowed) return result === undefined ? undefined : counted(ctx, result);
  const denied: Decision = { ...result, allowed: false, remaining: 0, retryAfterMs: Math.max(1, result.resetMs) };
  denied.approximate = true;
  return counted(ctx, denied);
}

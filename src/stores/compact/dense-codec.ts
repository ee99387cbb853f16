/**
 * MemoryStore's dense compact layout: a key's state in ONE float64 word, so a slot is 16 bytes
 * (8 of fingerprint, 8 of state) instead of 24, and the same budget holds 1.5× the keys. For
 * now only a bare fixed-window state uses it: its count packed under its window (the window's
 * number for aligned windows, its start ms for first-hit ones). A record that does not fit (a
 * count past the bits its window leaves, see `countBits`) is summarised instead, which is
 * conservative. Every encoding is checked by decoding it back: a word is only written when it
 * reads back as the very same state.
 *
 * The shared store (threads) keeps its own 2-word layout (state-codec.ts); a MemoryStore
 * snapshot saves compact rows in that 2-word form too (and `compactAt.words: 1`), so old
 * files restore as before.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import type { FixedWindowSpec } from "../../algorithms/specs.ts";
import type { CompiledRule, RuleRecord } from "../../core/rule.ts";
import { decodeRecord, encodeRecord } from "./state-codec.ts";

/** Whether `rule`'s records are meant to fit one word (the dense layout serves stores whose rules all are). */
export function denseRule(rule: CompiledRule): boolean {
  if (!rule.bare || rule.ban !== undefined) return false;
  const kind = (rule.members[0] as Algorithm).kind;
  // gcra/leaky-bucket would fit as ms · den + ticks, but `den` follows the limit, and a limit
  // change (updateRule) keeps the table's records: a word must decode under any limit.
  return kind === "fixed-window";
}

/** Per member: the fixed-window count's bits (computed once). */
const params = new WeakMap<Algorithm, number>();

/**
 * Bits a fixed-window count takes in the word: from the shape only (window and anchor), never
 * the limit, which a limit change replaces while the records stay. What is left of 52 bits once
 * window numbers up to ±2^42 ms (past year 2100) have room: 9 bits for 1 ms windows, 18 for 1 s,
 * 24 for 1 min. A count past it does not fit (summarised).
 */
function countBits(m: Algorithm): number {
  let bits = params.get(m);
  if (bits === undefined) {
    bits = Math.max(1, Math.min(30, 52 - 43 + Math.floor(Math.log2(windowUnit(m)))));
    params.set(m, bits);
  }
  return bits;
}

/** The window number a fixed-window word holds for start `w` (aligned: w / windowMs; first-hit: w itself). */
function windowUnit(m: Algorithm): number {
  return (m.spec as FixedWindowSpec).anchor === "first" ? 1 : (m.spec as FixedWindowSpec).windowMs;
}

/** The word for a bare `rule`'s `record`, or undefined when it does not fit one word exactly. */
export function encodeWord(rule: CompiledRule, record: RuleRecord): number | undefined {
  if (!denseRule(rule)) return undefined;
  const m = rule.members[0] as Algorithm;
  const s = record as FixedWindowState;
  const scale = 2 ** countBits(m);
  if (!(Number.isInteger(s.c) && s.c >= 0 && s.c < scale)) return undefined;
  const word = (s.w / windowUnit(m)) * scale + s.c;
  if (!Number.isSafeInteger(word)) return undefined;
  const back = decodeWord(rule, word) as FixedWindowState;
  return back.w === s.w && back.c === s.c ? word : undefined;
}

/** The record a word written by `encodeWord` under `rule` holds. */
export function decodeWord(rule: CompiledRule, word: number): RuleRecord {
  const m = rule.members[0] as Algorithm;
  const scale = 2 ** countBits(m);
  const q = Math.floor(word / scale);
  return { w: q * windowUnit(m), c: word - q * scale } satisfies FixedWindowState;
}

/** Writes `record` at `words[at..]` in a layout of `stateWords` words per slot; false when it does not fit. */
export function writeState(
  rule: CompiledRule,
  record: RuleRecord,
  words: Float64Array,
  at: number,
  stateWords: number,
): boolean {
  if (stateWords !== 1) return encodeRecord(rule, record, words, at);
  const word = encodeWord(rule, record);
  if (word === undefined) return false;
  words[at] = word;
  return true;
}

/** The record at `words[at..]` in a layout of `stateWords` words per slot (written by `writeState`). */
export function readState(rule: CompiledRule, words: Float64Array, at: number, stateWords: number): RuleRecord {
  return stateWords === 1 ? decodeWord(rule, words[at] as number) : decodeRecord(rule, words, at);
}

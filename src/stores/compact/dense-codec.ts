/**
 * MemoryStore's dense compact layout: a key's state in ONE float64 word, so a slot is 16 bytes
 * (8 of fingerprint, 8 of state) instead of 24, and the same budget holds 1.5× the keys. A bare
 * fixed-window state packs its count under its window (the window's number for aligned windows,
 * its start ms for first-hit ones); a sliding window packs both counts under its window number;
 * a bare gcra or leaky-bucket state is its arrival time in whole ms, a fraction of a ms rounded
 * UP (a later arrival time admits no more, under any limit: the 2-word layout reads a state
 * written under another interval the same way); a token bucket is the instant it is full again
 * (as its summary cell keeps it, nudged later), read back as empty that long before: the same
 * balance at every instant from its own time on, and no more before it. A record that does not
 * fit (a count past the bits its window leaves, see `countBits`; an instant that is not finite)
 * is summarised instead, which is conservative. Every encoding is checked by decoding it back:
 * a word is only written when it reads back as the very same state (gcra: the same instant or
 * the next ms; token bucket: no more tokens at any instant).
 *
 * The shared store (threads) keeps its own 2-word layout (state-codec.ts); a MemoryStore
 * snapshot saves compact rows in that 2-word form too (and `compactAt.words: 1`), so old
 * files restore as before.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import type { GcraState } from "../../algorithms/gcra.ts";
import { isLog, type SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { SlidingWindowState } from "../../algorithms/sliding-window.ts";
import type { FixedWindowSpec, SlidingWindowSpec, TokenBucketSpec } from "../../algorithms/specs.ts";
import type { TokenBucketState } from "../../algorithms/token-bucket.ts";
import type { CompiledRule, RuleRecord } from "../../core/rule.ts";
import {
  cellCounts,
  coarsestGrid,
  countsLog,
  decodeGrid,
  encodeGrid,
  isPayload,
  payloadOf,
  payloadWord,
} from "./log-bound.ts";
import { decodePacked, encodePacked, frameCode, frameOf, type PackFrame, packedRule } from "./packed-codec.ts";
import { compactable, decodeRecord, denOf, encodeRecord } from "./state-codec.ts";

/** Whether `rule`'s records are meant to fit one word (the dense layout serves stores whose rules all are). */
export function denseRule(rule: CompiledRule): boolean {
  if (!rule.bare || rule.ban !== undefined) return false;
  const kind = (rule.members[0] as Algorithm).kind;
  // gcra/leaky-bucket: whole ms only (ms · den + ticks would not decode under another limit, and
  // a limit change, updateRule, keeps the table's records).
  return DENSE_KINDS.has(kind) || DENSE_LOGS.has(kind);
}

/** The algorithms whose bare state fits one word. */
const DENSE_KINDS = new Set(["fixed-window", "sliding-window", "token-bucket", "gcra", "leaky-bucket"]);
/**
 * Bare sliding logs and leases take the dense layout too: one entry exactly, more as their
 * count at the newest entry (`memberWord`), a per-key bound that only over-counts. Why (issue
 * 34): in 24-byte slots the compact tier held 2/3 of the keys, so a flood between two visits of
 * returning keys longer than its slots pushed them into the summary (`maxKeys: 100`: 25–30% of
 * their requests refused; 24 rules: 10%).
 */
const DENSE_LOGS = new Set(["sliding-log", "concurrency"]);

/** Whether a bare rule's member keeps an arrival time (gcra, leaky bucket) rather than a window count. */
function isArrival(m: Algorithm): boolean {
  return m.kind === "gcra" || m.kind === "leaky-bucket";
}

/** Per member: a window count's bits (computed once). */
const params = new WeakMap<Algorithm, number>();

/**
 * Bits a window count takes in the word: from the shape only (window and anchor), never the
 * limit, which a limit change replaces while the records stay. What is left of 52 bits once
 * window numbers up to ±2^42 ms (past year 2100) have room: 9 bits for 1 ms windows, 18 for 1 s,
 * 24 for 1 min; a sliding window's two counts take half each. A count past it does not fit
 * (summarised).
 */
function countBits(m: Algorithm): number {
  let bits = params.get(m);
  if (bits === undefined) {
    const total = 52 - 43 + Math.floor(Math.log2(windowUnit(m)));
    bits = Math.max(1, Math.min(30, m.kind === "sliding-window" ? Math.floor(total / 2) : total));
    params.set(m, bits);
  }
  return bits;
}

/** The window number a window word holds for start `w` (aligned: w / windowMs; first-hit: w itself). */
function windowUnit(m: Algorithm): number {
  if (m.kind === "sliding-window") return (m.spec as SlidingWindowSpec).windowMs;
  return (m.spec as FixedWindowSpec).anchor === "first" ? 1 : (m.spec as FixedWindowSpec).windowMs;
}

/** A token bucket's full capacity (thousandths) and refill (thousandths per ms). */
function bucketOf(m: Algorithm): [number, number] {
  const spec = m.spec as TokenBucketSpec;
  return [spec.capacity * 1000, spec.refillPerSecond];
}

/** The word of a token bucket: the instant it is full again, nudged two ulps later (as its summary). */
function encodeBucket(m: Algorithm, s: TokenBucketState): number | undefined {
  const [full, r] = bucketOf(m);
  const exact = s.t + (full - s.b) / r;
  // A negative balance (a penalty) would read back as an empty bucket: more tokens, so it does not fit.
  if (!(Number.isFinite(exact) && s.b >= 0)) return undefined;
  // An empty bucket whose instant survives the round trip is stored as it is: read back, it is
  // the very same state (nudged, it would answer a retry 1 ms later than the record it came
  // from while claiming to be exact: issue 34's restart differential, seed 340034).
  const same = decodeBucket(m, exact);
  if (same.b === s.b && same.t === s.t) return exact;
  const word = exact + Math.abs(exact) * 2 ** -51;
  const back = decodeBucket(m, word);
  // Read back empty at back.t: the original's balance, run back to that instant, must not be
  // below 0 (the read-back then holds no more at any instant).
  return s.b + (back.t - s.t) * r >= 0 ? word : undefined;
}

/** The state a token bucket's word holds: empty until `full / r` before it is full again. */
function decodeBucket(m: Algorithm, word: number): TokenBucketState {
  const [full, r] = bucketOf(m);
  return { b: 0, t: word - full / r };
}

/** The word for a bare `rule`'s `record`, or undefined when it does not fit one word exactly. */
export function encodeWord(rule: CompiledRule, record: RuleRecord): number | undefined {
  return denseRule(rule) ? memberWord(rule.members[0] as Algorithm, record) : undefined;
}

/** The record a word written by `encodeWord` under `rule` holds. */
export function decodeWord(rule: CompiledRule, word: number): RuleRecord {
  return wordMember(rule.members[0] as Algorithm, word);
}

/** A log bound's entry count stays below this (packed under its newest instant). */
const LOG_COUNT = 2 ** 10;
/** A log bound's newest instant (whole ms) stays below this, so the packed word is exact. */
const MAX_LOG_NEWEST = 2 ** 42;
/** Bits of a one-word log's unary grid code (log-bound.ts), below its 5-bit grid exponent and 42-bit newest. */
const GRID_BITS = 14;
/** A one-word log's grid is at most 2^31 ms (its exponent takes 5 bits). */
const MAX_GRID = 31;

/**
 * A log of ≥ 2 entries as one word, a bound of the key's own log. First choice (issue 34): the
 * newest exactly (whole ms below 2^42), the older entries on a grid (log-bound.ts) of W/2 to W
 * ms, or 2, 4 or 8 times finer when the entries fit 14 bits there; that bound does not drift
 * under re-encoding, so a key that sends below its limit stays below it; 13 or more live entries
 * as counts per cell of the coarsest grid (`WIDE_MAX`). Else (more than those, a newest past
 * 2^42 or with a fraction of a ms): every entry at the newest (rounded up),
 * which over-counts more and grows by one with each re-encoded request while the oldest entry
 * counts (as state-codec.ts `encodeLogBound`, without the oldest's span). Both are negative,
 * which no exact entry here is; undefined when neither fits (summarised).
 */
function logWord(m: Algorithm, log: SlidingLogState): number | undefined {
  const T = log.buf[(log.head + log.n - 1) % log.buf.length] as number;
  if (Number.isSafeInteger(T) && T >= 0 && T < MAX_LOG_NEWEST) {
    const top = Math.min(MAX_GRID, coarsestGrid(m.horizonMs));
    const code = encodeGrid(log, T, m.horizonMs, GRID_BITS, top - 3, top);
    if (code !== undefined) {
      // Payload bits 60..19: T; 18..14: the grid exponent; 13..0: the code.
      return payloadWord(Math.floor(T / 2 ** 13), (T % 2 ** 13) * 2 ** 19 + code.k * 2 ** GRID_BITS + code.lo);
    }
    // Too many entries for a unary code: counts per cell on the coarsest grid, in the wide
    // counts code (`WIDE_MAX`), its exponent field never `top` (that of an older build's counts
    // code, still read back from a state file's pair row: `gridLog`).
    const counts = cellCounts(log, T, m.horizonMs, top, WIDE_MAX);
    if (counts !== undefined) {
      const [c0, c1, c2] = counts as [number, number, number];
      const v = ((c0 - 1) * 2 ** 6 + c1) * 2 ** 6 + c2;
      const high = Math.floor(v / 2 ** (GRID_BITS - 1));
      const field = high < top ? high : high + 1;
      const code = v % 2 ** (GRID_BITS - 1);
      return payloadWord(Math.floor(T / 2 ** 13), (T % 2 ** 13) * 2 ** 19 + field * 2 ** GRID_BITS + code);
    }
  }
  // A fraction of a ms rounds up (later: counts as long or longer).
  const newest = Math.ceil(T);
  if (!(Number.isSafeInteger(newest) && newest >= 0 && newest < MAX_LOG_NEWEST && log.n < LOG_COUNT)) return undefined;
  return -(newest * LOG_COUNT + log.n) - 1;
}

/**
 * Most entries per cell of the wide counts code: 62, 63 and 63, as (c0 − 1)·2^12 + c1·2^6 + c2
 * below 31·2^13, its top 5 bits in the exponent field (skipping the coarsest grid's exponent,
 * which marks an older build's counts code of 4, 5 and 4 bits: `gridLog`) and the rest under the code's clear top bit. Why (issue 34):
 * a log of 40 per 3 s steady at three quarters of its limit holds about 20 entries in a 2-s cell,
 * past the 4-5-4-bit code, and fell back to the drifting "all at the newest" word (360 of 1,000
 * refused); the exponent field is not needed there (the counts code's grid is always the coarsest).
 */
const WIDE_MAX = [62, 63, 63];

/** The log a grid word of `logWord` holds (`m`: its member, whose window gives the coarsest grid). */
function gridLog(m: Algorithm, word: number): SlidingLogState {
  const [hi, lo] = payloadOf(word);
  const T = hi * 2 ** 13 + Math.floor(lo / 2 ** 19);
  const k = Math.floor(lo / 2 ** GRID_BITS) % 32;
  const code = lo % 2 ** GRID_BITS;
  if (code < 2 ** (GRID_BITS - 1)) {
    const top = Math.min(MAX_GRID, coarsestGrid(m.horizonMs));
    if (k === top) {
      // An older build's counts code (pair rows of state files): cells 0, 1, 2 of the coarsest
      // grid in 4, 5 and 4 bits, cell 0's count less one.
      return countsLog([Math.floor(code / 2 ** 9) + 1, Math.floor(code / 2 ** 4) % 2 ** 5, code % 2 ** 4], T, k);
    }
    const v = (k < top ? k : k - 1) * 2 ** (GRID_BITS - 1) + code;
    return countsLog([Math.floor(v / 2 ** 12) + 1, Math.floor(v / 2 ** 6) % 2 ** 6, v % 2 ** 6], T, top);
  }
  return decodeGrid({ k, hi: 0, lo: code }, T, GRID_BITS);
}

/**
 * One member's state as one word (see the module), or undefined when it does not fit; a sliding
 * log or lease of at most one entry (inside a pair: `pairRule`) is that entry, NaN for none.
 */
function memberWord(m: Algorithm, state: unknown): number | undefined {
  if (isLog(m)) {
    const log = state as SlidingLogState;
    if (log.n <= 1) {
      if (log.n === 0) return Number.NaN;
      const only = log.buf[log.head % log.buf.length] as number;
      // A negative instant would read back as a bound (below): summarised instead.
      return only >= 0 ? only : undefined;
    }
    return logWord(m, log);
  }
  if (isArrival(m)) {
    const g = state as GcraState;
    const word = g.ticks === 0 ? g.ms : g.ms + 1;
    if (!(Number.isSafeInteger(word) && g.ticks >= 0)) return undefined;
    // Decoded under the current interval: the same instant, or up to a ms later (never earlier).
    const back = wordMember(m, word) as GcraState;
    return back.ticks === 0 && (back.ms > g.ms || (back.ms === g.ms && g.ticks === 0)) ? word : undefined;
  }
  if (m.kind === "token-bucket") return encodeBucket(m, state as TokenBucketState);
  const scale = 2 ** countBits(m);
  const fits = (c: number) => Number.isInteger(c) && c >= 0 && c < scale;
  if (m.kind === "sliding-window") {
    const s = state as SlidingWindowState;
    if (!(fits(s.p) && fits(s.c))) return undefined;
    const word = ((s.w / windowUnit(m)) * scale + s.p) * scale + s.c;
    if (!Number.isSafeInteger(word)) return undefined;
    const back = wordMember(m, word) as SlidingWindowState;
    return back.w === s.w && back.p === s.p && back.c === s.c ? word : undefined;
  }
  const s = state as FixedWindowState;
  if (!fits(s.c)) return undefined;
  const word = (s.w / windowUnit(m)) * scale + s.c;
  if (!Number.isSafeInteger(word)) return undefined;
  const back = wordMember(m, word) as FixedWindowState;
  return back.w === s.w && back.c === s.c ? word : undefined;
}

/** The state of member `m` a word written by `memberWord` holds. */
function wordMember(m: Algorithm, word: number): unknown {
  if (isLog(m)) {
    if (isPayload(word)) return gridLog(m, word);
    if (word < 0) {
      const packed = -(word + 1);
      const n = packed % LOG_COUNT;
      return { buf: new Array<number>(n).fill((packed - n) / LOG_COUNT), head: 0, n } satisfies SlidingLogState;
    }
    const buf = Number.isNaN(word) ? [] : [word];
    return { buf, head: 0, n: buf.length } satisfies SlidingLogState;
  }
  if (isArrival(m)) return { ms: word, ticks: 0, den: denOf(m) } satisfies GcraState;
  if (m.kind === "token-bucket") return decodeBucket(m, word);
  const scale = 2 ** countBits(m);
  if (m.kind === "sliding-window") {
    const q = Math.floor(word / (scale * scale));
    const rest = word - q * scale * scale;
    const p = Math.floor(rest / scale);
    return { w: q * windowUnit(m), p, c: rest - p * scale } satisfies SlidingWindowState;
  }
  const q = Math.floor(word / scale);
  return { w: q * windowUnit(m), c: word - q * scale } satisfies FixedWindowState;
}

/**
 * Whether `rule` is a composite of two members whose states fit one word each: in a 2-word slot
 * (a 2-word tier, a snapshot row), one member per word, each as conservative as a bare member's
 * dense word, so the pair admits no more than the record (issue 34: composites went straight to
 * the summary, 45–73% of returning keys refused). Pairs the exact 2-word layout also holds
 * (gcra, leaky bucket, a log) take it too: both write the same words wherever that layout is
 * exact, and the pair's also holds a log of 2 or more entries (as a bound), which the exact one
 * summarised (39.6% of returning keys refused at `maxKeys: 100`).
 */
export function pairRule(rule: CompiledRule): boolean {
  if (rule.bare || rule.ban !== undefined || rule.members.length !== 2) return false;
  return rule.members.every((m) => DENSE_KINDS.has(m.kind) || isLog(m));
}

/** Whether `rule`'s records take one word in the compact tier (a bare rule's dense word, or a packed composite's). */
export function oneWordRule(rule: CompiledRule): boolean {
  return denseRule(rule) || packedRule(rule);
}

/** Whether `rule`'s records can ever be stored in MemoryStore's compact tier (2-word, pair or packed layout). */
export function fitsCompact(rule: CompiledRule): boolean {
  return compactable(rule) || pairRule(rule) || packedRule(rule);
}

/**
 * Writes `record` at `words[at..]` in a layout of `stateWords` words per slot; false when it does
 * not fit. A packed composite (packed-codec.ts) is written within its table's `frame`: in a
 * 1-word slot the word alone, in a 2-word one (or a snapshot row) the word and the frame.
 */
export function writeState(
  rule: CompiledRule,
  record: RuleRecord,
  words: Float64Array,
  at: number,
  stateWords: number,
  frame?: PackFrame,
): boolean {
  if (stateWords !== 1) {
    if (pairRule(rule)) {
      const a = memberWord(rule.members[0] as Algorithm, (record as unknown[])[0]);
      const b = memberWord(rule.members[1] as Algorithm, (record as unknown[])[1]);
      if (a === undefined || b === undefined) return false;
      words[at] = a;
      words[at + 1] = b;
      return true;
    }
    if (!packedRule(rule) || frame === undefined) return encodeRecord(rule, record, words, at);
    const word = encodePacked(rule, record, frame);
    const code = frameCode(frame);
    if (word === undefined || code === undefined) return false;
    words[at] = word;
    words[at + 1] = code;
    return true;
  }
  const word = rule.bare
    ? encodeWord(rule, record)
    : frame === undefined
      ? undefined
      : encodePacked(rule, record, frame);
  if (word === undefined) return false;
  words[at] = word;
  return true;
}

/**
 * Whether the state written at `words[at..]` by `writeState` reads back as `record` itself, not
 * a bound of it (a log of ≥ 2 entries at its newest, an arrival time rounded up, a token bucket
 * read back empty earlier): only then may a decision from it claim to be exact (SPEC §10).
 */
export function writtenExactly(
  rule: CompiledRule,
  record: RuleRecord,
  words: Float64Array,
  at: number,
  stateWords: number,
  frame?: PackFrame,
): boolean {
  // Window counts are written only when they read back exactly (`memberWord`, state-codec.ts, packed-codec.ts).
  if (rule.members.every((m) => m.kind === "fixed-window" || m.kind === "sliding-window")) return true;
  const back = readState(rule, words, at, stateWords, frame);
  if (rule.bare) return sameState(rule.members[0] as Algorithm, back, record);
  return rule.members.every((m, i) => sameState(m, (back as unknown[])[i], (record as unknown[])[i]));
}

/** Whether member `m`'s states `a` and `b` are the same (a log's entries in order, whatever its buffer). */
function sameState(m: Algorithm, a: unknown, b: unknown): boolean {
  if (isLog(m)) {
    const x = a as SlidingLogState;
    const y = b as SlidingLogState;
    if (x.n !== y.n) return false;
    for (let i = 0; i < x.n; i++) {
      if (x.buf[(x.head + i) % x.buf.length] !== y.buf[(y.head + i) % y.buf.length]) return false;
    }
    return true;
  }
  if (isArrival(m)) {
    const x = a as GcraState;
    const y = b as GcraState;
    return x.ms === y.ms && x.ticks === y.ticks && (x.ticks === 0 || x.den === y.den);
  }
  const x = a as Record<string, number>;
  const y = b as Record<string, number>;
  return Object.keys(y).every((k) => x[k] === y[k]);
}

/**
 * The record at `words[at..]` in a layout of `stateWords` words per slot (written by
 * `writeState`; a packed composite's 1-word slot within its table's `frame`).
 */
export function readState(
  rule: CompiledRule,
  words: Float64Array,
  at: number,
  stateWords: number,
  frame?: PackFrame,
): RuleRecord {
  if (stateWords === 1) {
    return rule.bare
      ? decodeWord(rule, words[at] as number)
      : decodePacked(rule, words[at] as number, frame as PackFrame);
  }
  if (pairRule(rule)) {
    return [
      wordMember(rule.members[0] as Algorithm, words[at] as number),
      wordMember(rule.members[1] as Algorithm, words[at + 1] as number),
    ];
  }
  if (packedRule(rule)) return decodePacked(rule, words[at] as number, frameOf(words[at + 1] as number));
  return decodeRecord(rule, words, at);
}

/**
 * A rule's record as (at most) two float64 words: how the compact tier stores a key's state
 * without an object per key. Exact, but for a bare sliding log (or concurrency spec) of more than
 * two entries, which is kept as a bound of its own key's log (see `encodeLogBound`). A record
 * that does not fit (a log of more than one entry inside a composite, a ban, a composite wider
 * than two words, counts past 2^26) is not encoded: it skips the compact tier and is summarised
 * instead, which is conservative. Words are plain numbers in a Float64Array, so the same codec
 * serves an ArrayBuffer or a SharedArrayBuffer.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import { emissionInterval, type GcraState } from "../../algorithms/gcra.ts";
import { isLog, type SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { SlidingWindowState } from "../../algorithms/sliding-window.ts";
import type { GcraSpec, LeakyBucketSpec } from "../../algorithms/specs.ts";
import type { TokenBucketState } from "../../algorithms/token-bucket.ts";
import type { CompiledRule, RuleRecord } from "../../core/rule.ts";
import { coarsestGrid, decodeGrid, encodeGrid, isPayload, payloadOf, payloadWord } from "./log-bound.ts";

/** Words per compact slot: every admitted record fits in this many float64s. */
export const STATE_WORDS = 2;

/** Counts packed two to a word stay below this (so the pair is an exact integer). */
const PACK = 2 ** 26;
/** A log bound's span (whole ms back to its oldest entry) stays below this; its count is packed above it. */
const SPAN = 2 ** 32;
/** Most entries a log bound holds (count · SPAN + span stays an exact integer). */
const MAX_BOUND_ENTRIES = 2 ** 20;

/** Bits of a two-word log bound's unary grid code (log-bound.ts), below its 6-bit grid exponent in word 1. */
const GRID_BITS = 55;

/**
 * A bare log of more than two entries as a bound of itself, per key (never shared with another
 * key). Word 0 is the newest entry exactly (a log reads a clock behind its newest entry as that
 * entry's instant: a later one would let older entries expire early). Word 1, first choice
 * (issue 34): the older entries rounded later onto a grid of power-of-two ms anchored at 0, the
 * finest of W/256 to W that fits 55 bits (log-bound.ts): re-encoding never moves them again, so
 * a key that returns more often than once a window does not drift toward its limit. Else (a log
 * too long for that): the older format, `-(n · 2^32 + back) - 1`: the oldest at the newest less
 * the whole ms back to it, the others at the newest (which grows by one with each re-encoded
 * request while the oldest counts; old state files hold it, and read back as before). Either
 * way every entry is read at or after its real instant: the bound admits no more than the log,
 * in any window from now on, under any limit. No exact log writes a negative word 1 (its second
 * entry is at or after a first entry ≥ 0). A log whose newest entry is negative, or longer than
 * 2^20 entries, does not fit; a span of 2^32 ms or more is shortened (its oldest read later still).
 */
function encodeLogBound(s: SlidingLogState, W: number, words: Float64Array, at: number): boolean {
  const len = s.buf.length;
  const oldest = s.buf[s.head % len] as number;
  const newest = s.buf[(s.head + s.n - 1) % len] as number;
  if (!(newest >= 0) || s.n > MAX_BOUND_ENTRIES) return false;
  if (newest < 2 ** 53) {
    const top = coarsestGrid(W);
    const code = encodeGrid(s, newest, W, GRID_BITS, top - 8, top);
    if (code !== undefined) {
      words[at] = newest;
      // Payload bits 60..55: the grid exponent (≤ 52); 54..0: the code.
      words[at + 1] = payloadWord(code.k * 2 ** 23 + code.hi, code.lo);
      return true;
    }
  }
  let back = Math.min(SPAN - 1, Math.max(0, Math.floor(newest - oldest)));
  // The subtraction rounds: make sure the decoded oldest is at or after the real one.
  while (back > 0 && newest - back < oldest) back--;
  words[at] = newest;
  words[at + 1] = -(s.n * SPAN + back) - 1;
  return true;
}

/** The log `encodeLogBound` wrote (`b`, its word 1, is negative). */
function decodeLogBound(newest: number, b: number): SlidingLogState {
  if (isPayload(b)) {
    const [hi, lo] = payloadOf(b);
    return decodeGrid({ k: Math.floor(hi / 2 ** 23), hi: hi % 2 ** 23, lo }, newest, GRID_BITS);
  }
  const packed = -(b + 1);
  const n = Math.floor(packed / SPAN);
  const buf = new Array<number>(n).fill(newest);
  buf[0] = newest - (packed - n * SPAN);
  return { buf, head: 0, n };
}

/**
 * Float64 words one member's state takes in the compact tier. In a composite a sliding log
 * takes one word (at most one entry), so a two-log rule (5 per minute and 20 per hour) fits.
 */
function memberWords(m: Algorithm, bare: boolean): number {
  return (m.kind === "gcra" || m.kind === "leaky-bucket" || isLog(m)) && !bare ? 1 : 2;
}

/** Each gcra/leaky-bucket member's tick size (ticks per ms), computed once per compiled member. */
const dens = new WeakMap<Algorithm, number>();
/** A gcra/leaky-bucket member's tick size (ticks per ms): the `den` a state read under it carries. */
export function denOf(m: Algorithm): number {
  let den = dens.get(m);
  if (den === undefined) {
    den = emissionInterval(m.spec as GcraSpec | LeakyBucketSpec).den;
    dens.set(m, den);
  }
  return den;
}

/** A gcra/leaky-bucket arrival time in whole ms and ticks of the rule's own `den` (as the step reads it). */
function gcraAt(m: Algorithm, s: GcraState): [number, number] {
  const den = denOf(m);
  // Written under another interval: the step reads it rounded up to the next ms, so store that.
  if (s.den === den || s.ticks === 0) return [s.ms, s.ticks];
  return [s.ms + 1, 0];
}

/** Whether records of `rule` can ever be stored in the compact tier (a ban never is). */
export function compactable(rule: CompiledRule): boolean {
  if (rule.ban !== undefined) return false;
  let words = 0;
  for (const m of rule.members) words += memberWords(m, rule.bare);
  return words <= STATE_WORDS;
}

/** Writes member `m`'s `state` at `words[at..]`; false when it does not fit exactly. */
function encodeMember(m: Algorithm, state: unknown, words: Float64Array, at: number, bare: boolean): boolean {
  switch (m.kind) {
    case "fixed-window": {
      const s = state as FixedWindowState;
      words[at] = s.w;
      words[at + 1] = s.c;
      return true;
    }
    case "sliding-window": {
      const s = state as SlidingWindowState;
      if (!(s.p >= 0 && s.p < PACK && s.c >= 0 && s.c < PACK && Number.isInteger(s.p) && Number.isInteger(s.c))) {
        return false;
      }
      words[at] = s.w;
      words[at + 1] = s.p * PACK + s.c;
      return true;
    }
    case "token-bucket": {
      const s = state as TokenBucketState;
      words[at] = s.b;
      words[at + 1] = s.t;
      return true;
    }
    case "gcra":
    case "leaky-bucket": {
      const [ms, ticks] = gcraAt(m, state as GcraState);
      words[at] = ms;
      if (bare) words[at + 1] = ticks;
      // In a composite one word holds whole ms only: a fraction of a ms does not fit exactly.
      return bare || ticks === 0;
    }
    case "sliding-log":
    case "concurrency": {
      const s = state as SlidingLogState;
      if (bare && s.n > 2) return encodeLogBound(s, m.horizonMs, words, at);
      if (s.n > (bare ? 2 : 1)) return false;
      const len = s.buf.length;
      words[at] = s.n > 0 ? (s.buf[s.head % len] as number) : Number.NaN;
      if (bare) words[at + 1] = s.n > 1 ? (s.buf[(s.head + 1) % len] as number) : Number.NaN;
      return true;
    }
  }
}

/** Reads member `m`'s state from `words[at..]` (written by `encodeMember`). */
function decodeMember(m: Algorithm, words: Float64Array, at: number, bare: boolean): unknown {
  const a = words[at] as number;
  const b = bare || memberWords(m, bare) === 2 ? (words[at + 1] as number) : Number.NaN;
  switch (m.kind) {
    case "fixed-window":
      return { w: a, c: b } satisfies FixedWindowState;
    case "sliding-window":
      return { w: a, p: Math.floor(b / PACK), c: b % PACK } satisfies SlidingWindowState;
    case "token-bucket":
      return { b: a, t: b } satisfies TokenBucketState;
    case "gcra":
    case "leaky-bucket": {
      return { ms: a, ticks: bare ? b : 0, den: denOf(m) } satisfies GcraState;
    }
    case "sliding-log":
    case "concurrency": {
      if (bare && b < 0 && a >= 0) return decodeLogBound(a, b);
      const buf: number[] = [];
      if (!Number.isNaN(a)) buf.push(a);
      if (!Number.isNaN(b)) buf.push(b);
      return { buf, head: 0, n: buf.length } satisfies SlidingLogState;
    }
  }
}

/** Writes `record` at `words[at..at+STATE_WORDS)`; false (nothing meaningful written) when it does not fit. */
export function encodeRecord(rule: CompiledRule, record: RuleRecord, words: Float64Array, at: number): boolean {
  if (rule.bare) return encodeMember(rule.members[0] as Algorithm, record, words, at, true);
  if (!compactable(rule)) return false;
  let offset = at;
  for (let i = 0; i < rule.members.length; i++) {
    const m = rule.members[i] as Algorithm;
    if (!encodeMember(m, (record as unknown[])[i], words, offset, false)) return false;
    offset += memberWords(m, false);
  }
  return true;
}

/** The record stored at `words[at..]` by `encodeRecord`, under `rule` (whose shape it was written for). */
export function decodeRecord(rule: CompiledRule, words: Float64Array, at: number): RuleRecord {
  if (rule.bare) return decodeMember(rule.members[0] as Algorithm, words, at, true);
  const record: unknown[] = [];
  let offset = at;
  for (const m of rule.members) {
    record.push(decodeMember(m, words, offset, false));
    offset += memberWords(m, false);
  }
  return record;
}

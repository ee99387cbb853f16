/**
 * A composite rule's record (2–4 members, or members and a ban) in ONE float64 word, so it takes
 * a 16-byte slot of MemoryStore's compact tier like a bare rule's (dense-codec.ts), not 24 bytes
 * or none. Why (issue 34): at `maxKeys: 100` a pair held 6,248 slots against a bare rule's 9,368,
 * fewer than a one-shot flood passed between two visits of returning keys, so 12–40% of their
 * requests were refused (read back from the summary); wider composites and rules with a ban never
 * reached the compact tier at all (80%).
 *
 * Each member takes an equal share of the word's 52 bits. Instants are offsets from the table's
 * frame (`PackFrame`: a base instant and a range of 16 horizons or more, both kept by the table
 * and moved, every slot re-encoded, before a write would fall out of it: memory/pack-frame.ts),
 * in power-of-two ms units that the share leaves; an instant that is not a whole unit is rounded
 * LATER, which admits no more under every algorithm (a later arrival time, a bucket full again
 * later, a log entry or lease counting longer): such a slot holds a bound of its key's state and
 * says so (`writtenExactly`). Window counts are exact, their window a small number of windows
 * past the frame's base. A record that does not fit (a count past its bits, an instant past the
 * range, a ban with strikes or a ban running) is not written: it is summarised, conservatively.
 * A ban is written only when it is a fresh key's (no strike, never banned) and read back so.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { FixedWindowSpec, SlidingWindowSpec, TokenBucketSpec } from "../../algorithms/specs.ts";
import { freshBan } from "../../core/ban.ts";
import type { CompiledRule, RuleRecord } from "../../core/rule.ts";
import { cellCounts, coarsestGrid, countsLog, decodeGrid, encodeGrid, GRID_SHIFT, pointIndex } from "./log-bound.ts";
import { denOf } from "./state-codec.ts";

/** Where a table's packed instants are measured from (`base`, whole ms) and how far they reach (`range`, a power of two ms). */
export interface PackFrame {
  base: number;
  range: number;
  /**
   * Set on a frame read from a row written before sliding logs took the grid layout (its code a
   * whole number, `frameOf`): its log fields are read in the old layout, so old state files
   * restore as they did.
   */
  legacy?: boolean;
}

/** Bits of the word the members share. */
const WORD_BITS = 52;
/** Most members a packed word holds. */
const MAX_MEMBERS = 4;
/** The kinds whose state packs (a fixed window only aligned: a first-hit window's start is any ms). */
const PACKED_KINDS = new Set([
  "fixed-window",
  "sliding-window",
  "token-bucket",
  "gcra",
  "leaky-bucket",
  "sliding-log",
  "concurrency",
]);

/** Whether `rule`'s records pack into one word: not bare, at most four members, each of a packed kind. */
export function packedRule(rule: CompiledRule): boolean {
  if (rule.bare || rule.members.length > MAX_MEMBERS) return false;
  // A lease among three or four members gets a share of 17 or 13 bits: its newest instant is
  // rounded later by more than a ms, and a lease logged at its receipt behind that newest was
  // dropped by the log's clamped clock — an admission past the limit (helper plog34's property,
  // leases of 1 and 7 ms). Such rules are summarised instead, conservatively, as before packing.
  if (rule.members.length > 2 && rule.members.some((m) => m.kind === "concurrency")) return false;
  return rule.members.every(
    (m) => PACKED_KINDS.has(m.kind) && !(m.kind === "fixed-window" && (m.spec as FixedWindowSpec).anchor === "first"),
  );
}

/** The frame for a table of horizon `horizonMs` whose writes start at `t`: a range of 16 horizons or more. */
export function newFrame(t: number, horizonMs: number): PackFrame {
  const range = 2 ** Math.ceil(Math.log2(Math.max(2, 16 * horizonMs)));
  return { base: Math.floor(t - horizonMs), range };
}

/** Whether a write at `t` under horizon `horizonMs` still fits `frame` (else the table moves it: pack-frame.ts). */
export function frameHolds(frame: PackFrame, t: number, horizonMs: number): boolean {
  return t >= frame.base && t + 3 * horizonMs <= frame.base + frame.range && frame.range >= 8 * horizonMs;
}

/**
 * The frame as one number (a 2-word slot's second word, a snapshot row's): base · 64 + log2(range)
 * + 1/2. The half marks a row whose sliding-log fields have the grid layout (issue 34); rows
 * written before it have whole codes and read back in the old layout (`legacy`). Undefined when
 * the half would not survive (a base past ±2^45 ms): such a row is not written (summarised).
 */
export function frameCode(frame: PackFrame): number | undefined {
  const code = frame.base * 64 + Math.log2(frame.range) + 0.5;
  return frame.legacy !== true && Math.abs(code) < 2 ** 51 ? code : undefined;
}

/** The frame `frameCode` wrote (or an older build's whole code: `legacy`). */
export function frameOf(code: number): PackFrame {
  const low = ((code % 64) + 64) % 64;
  const lg = Math.floor(low);
  const frame: PackFrame = { base: (code - low) / 64, range: 2 ** lg };
  if (lg === low) frame.legacy = true;
  return frame;
}

/** Bits of each member's share. */
function shareBits(rule: CompiledRule): number {
  return Math.floor(WORD_BITS / rule.members.length);
}

/** The unit (ms, a power of two) of an instant given `bits` within `frame`. */
function unitOf(frame: PackFrame, bits: number): number {
  return Math.max(1, frame.range / 2 ** bits);
}

/** Bits a window number takes: enough for every window of the frame's range and a few past it. */
function windowBits(frame: PackFrame, windowMs: number): number {
  return Math.ceil(Math.log2(frame.range / windowMs + 4));
}

/** `x` as an offset in units `u` from the base, rounded later (clamped at the base: later still); undefined past `bits`. */
function laterOffset(x: number, frame: PackFrame, u: number, bits: number): number | undefined {
  if (!Number.isFinite(x)) return undefined;
  const off = Math.max(0, Math.ceil((x - frame.base) / u));
  return off < 2 ** bits ? off : undefined;
}

/**
 * Where a sliding log's grid field of `bits` bits puts things (window `W` within `frame`), or
 * undefined when the share leaves its code too few bits: [1][newest: nb][grid: gb][code: cb].
 * Grids `2^k` for k from `kLow` to `kTop` (W/2 or the frame's range/32, whichever is finer, and
 * up to 2^gb − 1 steps finer); the newest is rounded later to `2^kn` ms, which divides every
 * grid's cell (kn ≤ kLow), so it reads back in its own cell. Every figure comes from the frame
 * and the window (fixed for a table: the window is part of the rule's shape), so a field reads
 * back as it was written. Shares: 52 bits (a log and a ban) gb 3, 26 (2 members) gb 2, 17 (3) 1,
 * 13 (4) 0; whatever the code would take past 32 bits goes to the newest instead.
 */
function logLayout(bits: number, W: number, frame: PackFrame) {
  const gb = bits >= 52 ? 3 : bits >= 26 ? 2 : bits >= 17 ? 1 : 0;
  const R = Math.log2(frame.range);
  const kTop = Math.min(R - 5, coarsestGrid(W));
  const kLow = kTop - 2 ** gb + 1;
  let nb = R - kLow;
  let cb = bits - 1 - gb - nb;
  if (cb > 32) {
    nb += cb - 32;
    cb = 32;
  }
  return cb < 4 ? undefined : { gb, kLow, kTop, kn: R - nb, nb, cb };
}

/**
 * A sliding log (≥ 1 entry) as a grid field (`logLayout`), or undefined when it does not fit.
 * Why (issue 34): the share held a log as its count at the newest, which re-dated every older
 * entry at each re-encoding (a request): `[fixed-window 100/1 s, sliding-log 8/3 s]` at one
 * request a second had 200 of 1,000 requests refused, its real log none. Older entries go on
 * an absolute power-of-two grid instead (log-bound.ts), where re-encoding does not move them.
 */
function encodeLogGrid(log: SlidingLogState, W: number, bits: number, frame: PackFrame): number | undefined {
  const layout = logLayout(bits, W, frame);
  if (layout === undefined) return undefined;
  const { gb, kLow, kTop, kn, nb, cb } = layout;
  const T = log.buf[(log.head + log.n - 1) % log.buf.length] as number;
  if (!Number.isFinite(T)) return undefined;
  const un = 2 ** kn;
  const from = Math.floor(frame.base / un);
  const off = Math.max(0, pointIndex(T, un) - from);
  if (!(off < 2 ** nb)) return undefined;
  // A grid point (never a whole ms: see log-bound.ts), so that its cell is its own on every grid.
  const later = (from + off) * un + GRID_SHIFT;
  // Entries still counting at the real newest T, each in the cell of the written newest or older.
  const code = encodeGrid(log, later, W, cb, kLow, kTop, T - W);
  if (code !== undefined) return 2 ** (bits - 1) + (off * 2 ** gb + (code.k - kLow)) * 2 ** cb + code.lo;
  // Too many entries for a unary code: counts per cell of the coarsest grid, under a clear top
  // bit (a unary code's is always set: its first entry is the newest's, in cell 0). Why: in a
  // pair a log 30 per minute steady at a third fell back to the count layout, which piled every
  // entry at the newest and stayed piled (63 of 300 refused).
  const max = countsMax(cb);
  const counts = cellCounts(log, later, W, kTop, max, T - W);
  if (counts === undefined) return undefined;
  const [c0, c1, c2] = counts as [number, number, number];
  const lo = ((c0 - 1) * ((max[1] as number) + 1) + c1) * ((max[2] as number) + 1) + c2;
  return 2 ** (bits - 1) + (off * 2 ** gb + (kTop - kLow)) * 2 ** cb + lo;
}

/** Most entries per cell (0, 1, 2) of a counts code of `cb` bits: the top bit clear, the rest split 1:2:1 (cell 1 is whole). */
function countsMax(cb: number): number[] {
  const edge = Math.floor((cb - 1) / 4);
  const mid = cb - 1 - 2 * edge;
  return [2 ** edge, 2 ** mid - 1, 2 ** edge - 1];
}

/**
 * The log a grid field holds. Its newest reads up to `2^kn` ms later than it was, and a log
 * reads every clock behind its newest as the newest: an older entry read back at or before
 * `newest − W` (so left out there) that still counted at the real newest is read just after
 * that edge instead, where it counts at the written newest (and at no clock where the real one
 * had stopped counting it: every entry still reads at or after itself).
 */
function decodeLogGrid(field: number, W: number, bits: number, frame: PackFrame): SlidingLogState {
  const { gb, kLow, kn, cb } = logLayout(bits, W, frame) as NonNullable<ReturnType<typeof logLayout>>;
  const un = 2 ** kn;
  const rest = field - 2 ** (bits - 1);
  const lo = rest % 2 ** cb;
  const head = (rest - lo) / 2 ** cb;
  const j = head % 2 ** gb;
  const later = (Math.floor(frame.base / un) + (head - j) / 2 ** gb) * un + GRID_SHIFT;
  let log: SlidingLogState;
  if (lo < 2 ** (cb - 1)) {
    const max = countsMax(cb);
    const c2 = lo % ((max[2] as number) + 1);
    const rest = (lo - c2) / ((max[2] as number) + 1);
    const c1 = rest % ((max[1] as number) + 1);
    log = countsLog([(rest - c1) / ((max[1] as number) + 1) + 1, c1, c2], later, kLow + j);
  } else log = decodeGrid({ k: kLow + j, hi: 0, lo }, later, cb);
  const edge = later - W;
  const justAfter = edge + Math.max(Math.abs(edge) * 2 ** -51, Number.MIN_VALUE);
  for (let i = 0; i < log.n; i++) log.buf[i] = Math.max(log.buf[i] as number, justAfter);
  return log;
}

/**
 * A log as its count at its newest (rounded later) in `bits` bits: each entry counts as long
 * or longer (a bound). Every lease log, and a sliding log the grid does not hold (or one in a
 * legacy frame's row, with `bits` the whole share).
 */
function encodeLogCount(log: SlidingLogState, bits: number, frame: PackFrame): number | undefined {
  const nBits = Math.min(10, Math.max(1, Math.floor(bits / 3)));
  if (!(log.n < 2 ** nBits)) return undefined;
  if (log.n === 0) return 0;
  const newest = log.buf[(log.head + log.n - 1) % log.buf.length] as number;
  const off = laterOffset(newest, frame, unitOf(frame, bits - nBits), bits - nBits);
  return off === undefined ? undefined : off * 2 ** nBits + log.n;
}

/** The log a field of `encodeLogCount` holds. */
function decodeLogCount(field: number, bits: number, frame: PackFrame): SlidingLogState {
  const nBits = Math.min(10, Math.max(1, Math.floor(bits / 3)));
  const n = field % 2 ** nBits;
  const at = frame.base + ((field - n) / 2 ** nBits) * unitOf(frame, bits - nBits);
  return { buf: new Array<number>(n).fill(at), head: 0, n };
}

/** One member's state as a field of `bits` bits, or undefined when it does not fit. */
function encodeField(m: Algorithm, state: unknown, bits: number, frame: PackFrame): number | undefined {
  switch (m.kind) {
    case "gcra":
    case "leaky-bucket": {
      const g = state as { ms: number; ticks: number };
      if (!(g.ticks >= 0)) return undefined;
      return laterOffset(g.ticks === 0 ? g.ms : g.ms + 1, frame, unitOf(frame, bits), bits);
    }
    case "token-bucket": {
      const s = state as { b: number; t: number };
      const spec = m.spec as TokenBucketSpec;
      const full = spec.capacity * 1000;
      const r = spec.refillPerSecond;
      // A negative balance (a penalty) would read back as an empty bucket: more tokens.
      if (!(s.b >= 0 && Number.isFinite(s.t))) return undefined;
      const u = unitOf(frame, bits);
      let off = laterOffset(s.t + (full - s.b) / r, frame, u, bits);
      // Read back empty at `empty`: the original, run back to that instant, must hold ≥ 0 (then the
      // read-back holds no more at any instant); float rounding may need a unit more.
      for (let k = 0; off !== undefined && k < 3; k++) {
        const empty = frame.base + off * u - full / r;
        if (s.b + (empty - s.t) * r >= 0) return off;
        off = off + 1 < 2 ** bits ? off + 1 : undefined;
      }
      return undefined;
    }
    case "concurrency":
      // Leases keep the count layout: a lease is logged at its receipt, behind a newest that
      // would read back later, where the grid's newest would leave it out (plog34's property).
      return encodeLogCount(state as SlidingLogState, bits, frame);
    case "sliding-log": {
      const log = state as SlidingLogState;
      if (frame.legacy === true) return encodeLogCount(log, bits, frame);
      if (log.n === 0) return 0;
      // The top bit tells the layouts apart: set, the grid; clear, the count in the rest.
      return encodeLogGrid(log, m.horizonMs, bits, frame) ?? encodeLogCount(log, bits - 1, frame);
    }
    case "fixed-window": {
      const s = state as { w: number; c: number };
      const W = (m.spec as FixedWindowSpec).windowMs;
      const dBits = windowBits(frame, W);
      const k = s.w / W - Math.floor(frame.base / W);
      if (!(Number.isInteger(k) && k >= 0 && k < 2 ** dBits && Number.isInteger(s.c) && s.c >= 0)) return undefined;
      return s.c < 2 ** (bits - dBits) ? s.c * 2 ** dBits + k : undefined;
    }
    case "sliding-window": {
      const s = state as { w: number; p: number; c: number };
      const W = (m.spec as SlidingWindowSpec).windowMs;
      const dBits = windowBits(frame, W);
      const cBits = Math.floor((bits - dBits) / 2);
      const k = s.w / W - Math.floor(frame.base / W);
      const fits = (c: number) => Number.isInteger(c) && c >= 0 && c < 2 ** cBits;
      if (!(Number.isInteger(k) && k >= 0 && k < 2 ** dBits && cBits >= 1 && fits(s.p) && fits(s.c))) return undefined;
      return (s.p * 2 ** cBits + s.c) * 2 ** dBits + k;
    }
    default:
      return undefined;
  }
}

/** The state of member `m` a field written by `encodeField` holds. */
function decodeField(m: Algorithm, field: number, bits: number, frame: PackFrame): unknown {
  switch (m.kind) {
    case "gcra":
    case "leaky-bucket":
      return { ms: frame.base + field * unitOf(frame, bits), ticks: 0, den: denOf(m) };
    case "token-bucket": {
      const spec = m.spec as TokenBucketSpec;
      return { b: 0, t: frame.base + field * unitOf(frame, bits) - (spec.capacity * 1000) / spec.refillPerSecond };
    }
    case "concurrency":
      return decodeLogCount(field, bits, frame);
    case "sliding-log":
      if (frame.legacy === true) return decodeLogCount(field, bits, frame);
      if (field >= 2 ** (bits - 1)) return decodeLogGrid(field, m.horizonMs, bits, frame);
      return decodeLogCount(field, bits - 1, frame);
    case "fixed-window": {
      const W = (m.spec as FixedWindowSpec).windowMs;
      const dBits = windowBits(frame, W);
      const k = field % 2 ** dBits;
      return { w: (Math.floor(frame.base / W) + k) * W, c: (field - k) / 2 ** dBits };
    }
    default: {
      const W = (m.spec as SlidingWindowSpec).windowMs;
      const dBits = windowBits(frame, W);
      const cBits = Math.floor((bits - dBits) / 2);
      const k = field % 2 ** dBits;
      const counts = (field - k) / 2 ** dBits;
      const c = counts % 2 ** cBits;
      return { w: (Math.floor(frame.base / W) + k) * W, p: (counts - c) / 2 ** cBits, c };
    }
  }
}

/** `record` of a packed `rule` as one word within `frame`, or undefined when it does not fit (see the module). */
export function encodePacked(rule: CompiledRule, record: RuleRecord, frame: PackFrame): number | undefined {
  const states = record as unknown[];
  if (rule.ban !== undefined) {
    // Only a fresh key's ban (no strike, never banned) is implied; any other is summarised.
    const ban = states[rule.members.length] as { n: number; until: number; readBack?: boolean };
    if (!(ban.n === 0 && ban.until === Number.NEGATIVE_INFINITY && ban.readBack !== true)) return undefined;
  }
  const bits = shareBits(rule);
  let word = 0;
  for (let i = rule.members.length - 1; i >= 0; i--) {
    const field = encodeField(rule.members[i] as Algorithm, states[i], bits, frame);
    // A field past its share would spill into the next member's (an empty fixed window's number
    // needs more bits than a share of 13 leaves when its window is far shorter than the frame:
    // the log beside it then read back with fewer entries; packed-log-bound.test.ts found it).
    if (field === undefined || !(field < 2 ** bits)) return undefined;
    word = word * 2 ** bits + field;
  }
  return word;
}

/** The record a word written by `encodePacked` under `rule` within `frame` holds. */
export function decodePacked(rule: CompiledRule, word: number, frame: PackFrame): RuleRecord {
  const bits = shareBits(rule);
  const record: unknown[] = [];
  let rest = word;
  for (const m of rule.members) {
    const field = rest % 2 ** bits;
    rest = (rest - field) / 2 ** bits;
    record.push(decodeField(m, field, bits, frame));
  }
  if (rule.ban !== undefined) record.push(freshBan());
  return record;
}

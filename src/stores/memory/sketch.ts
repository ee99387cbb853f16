/**
 * The last tier behind `maxKeys`: a count-min-style summary of whole records for one rule (one
 * table), sized from the store's one summary budget. A record pushed out of the exact tiers is
 * *added* into one cell per row (`DEPTH` rows of `width` cells, chosen from the key's
 * fingerprint), so a cell stands for the sum of the states joined into it: it dominates each
 * of them (admits less) and grows only by units that were really counted (summary-codec.ts).
 * Reading a key back takes its most permissive row, which still dominates the key's own record:
 * a key can be over-counted, never reset.
 *
 * Slot 0 of a cell is the latest instant anything in it stops mattering: a cell past it is
 * empty again, and a key with an empty cell in any row was never summarised (exact: fresh).
 * When the store's budget must be shared with a new rule, a sketch folds in half (cell j joins
 * cell j + width/2), which is conservative too.
 *
 * A bare fixed-window rule with aligned windows takes the narrow layout instead (window-cells.ts:
 * one 32-bit word a cell, keys added by conservative update), 6× the cells in the same bytes.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import type { FixedWindowSpec } from "../../algorithms/specs.ts";
import type { BanPolicy } from "../../core/ban.ts";
import { type CompiledRule, memberState, type RuleRecord } from "../../core/rule.ts";
import { fmix32 } from "../compact/fingerprint.ts";
import {
  BAN_SLOTS,
  banCellFreshAt,
  isRate,
  joinBan,
  joinMember,
  joinRateOwn,
  memberFreshAt,
  memberSlots,
  readBan,
  readMember,
} from "../compact/summary-codec.ts";
import { WindowCells } from "./window-cells.ts";

/** Rows of every sketch: a key is over-counted only if all of its cells are shared with heavier keys. */
export const DEPTH = 4;

/** Float64 slots of one cell of `rule`. */
export function cellSlots(rule: CompiledRule): number {
  let slots = 1;
  for (const m of rule.members) slots += memberSlots(m);
  if (rule.ban !== undefined) slots += BAN_SLOTS;
  return slots;
}

/**
 * The window length when `rule` takes the narrow layout (a bare fixed-window rule, windows
 * aligned: every key shares the window, so a cell needs only a tag of it), else undefined.
 */
export function narrowWindow(rule: CompiledRule): number | undefined {
  if (!rule.bare) return undefined;
  const m = rule.members[0] as Algorithm;
  if (m.kind !== "fixed-window") return undefined;
  const spec = m.spec as FixedWindowSpec;
  return spec.anchor === "first" ? undefined : spec.windowMs;
}

/** Bytes a sketch of `width` cells per row takes for `rule`. */
export function sketchBytes(rule: CompiledRule, width: number): number {
  return DEPTH * width * (narrowWindow(rule) === undefined ? cellSlots(rule) * 8 : 4);
}

/** A fixed-size, conservative, additive summary of the records of one rule. */
export class Sketch {
  /** The rule cells are read and joined with: the table's current one (a limit change applies at once). */
  rule: CompiledRule;
  #width: number;
  readonly #slots: number;
  #cells: Float64Array;
  readonly #rows = new Int32Array(DEPTH);
  /** The latest instant any cell stops mattering: past it, the whole sketch is empty. */
  freshAt = Number.NEGATIVE_INFINITY;
  /** A cell's worth of scratch space (estimates are built here, never in the cells). */
  readonly #scratch: Float64Array;
  /** The narrow layout's cells (then `#cells` is empty and unused). */
  #narrow: WindowCells | undefined;

  /** `width` cells per row (float cells: rounded up to a power of two). */
  constructor(rule: CompiledRule, width: number) {
    this.rule = rule;
    const W = narrowWindow(rule);
    // Narrow rows take any width (a key's column scales its hash to it): rules share the budget evenly.
    // (Float rows stop at 65536: a state file may name a narrow width for a rule of float cells.)
    this.#width =
      W === undefined ? 2 ** Math.min(16, Math.ceil(Math.log2(Math.max(1, width)))) : Math.max(1, Math.floor(width));
    this.#slots = cellSlots(rule);
    this.#narrow = W === undefined ? undefined : new WindowCells(DEPTH * this.#width, W);
    this.#cells = new Float64Array(W === undefined ? DEPTH * this.#width * this.#slots : 0).fill(Number.NaN);
    this.#scratch = new Float64Array(this.#slots);
  }

  /** Whether keys of this summary skip the summary filter (the narrow layout: its cells alone keep never-seen keys apart). */
  get unfiltered(): boolean {
    return this.#narrow !== undefined;
  }

  /** Cells per row (a power of two). */
  get width(): number {
    return this.#width;
  }

  /** Bytes held by the cells. */
  get bytes(): number {
    return this.#narrow?.words.byteLength ?? this.#cells.byteLength;
  }

  /** The cells as base64 (for snapshots), with `extra` records of (h1, h2, record) added to a copy first. */
  toBase64(
    extra: Array<[number, number, RuleRecord, { rate: number[] }]> = [],
    now = Number.NEGATIVE_INFINITY,
  ): string {
    const narrow = this.#narrow;
    if (narrow !== undefined) {
      const saved = narrow.words;
      const savedLatest = narrow.latest;
      const savedFresh = this.freshAt;
      narrow.words = saved.slice();
      for (const [h1, h2, record] of extra) this.add(h1, h2, record, now);
      const bytes = narrow.toBytes();
      narrow.words = saved;
      narrow.latest = savedLatest;
      this.freshAt = savedFresh;
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
    }
    let cells = this.#cells;
    if (extra.length > 0) {
      const saved = this.#cells;
      const savedFresh = this.freshAt;
      this.#cells = saved.slice();
      for (const [h1, h2, record, a] of extra) this.add(h1, h2, record, now, a.rate);
      cells = this.#cells;
      this.#cells = saved;
      this.freshAt = savedFresh;
    }
    return Buffer.from(cells.buffer, cells.byteOffset, cells.byteLength).toString("base64");
  }

  /** Loads cells written by `toBase64` for the same rule and width; false (nothing loaded) if they do not fit. */
  load(base64: string): boolean {
    const bytes = Buffer.from(base64, "base64");
    if (this.#narrow !== undefined) return this.#loadNarrow(bytes);
    if (bytes.byteLength !== this.#cells.byteLength) return false;
    new Uint8Array(this.#cells.buffer, this.#cells.byteOffset, this.#cells.byteLength).set(bytes);
    let fresh = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < this.#cells.length; i += this.#slots) {
      const f = this.#cells[i] as number;
      if (f > fresh) fresh = f;
    }
    this.freshAt = fresh;
    return true;
  }

  /**
   * Adds `record` (as of `now`) into the key's cell of every row. With `rate` (per member a debt
   * and a base, see approx.ts `Approx`), `record` is what a read-back key took since its
   * read-back: see `joinRateOwn`.
   */
  add(h1: number, h2: number, record: RuleRecord, now: number, rate?: number[]): void {
    this.#locate(h1, h2);
    const narrow = this.#narrow;
    if (narrow !== undefined) {
      const state = record as FixedWindowState;
      if (!(state.c > 0)) return;
      const n = Math.round(state.w / narrow.windowMs);
      narrow.add(this.#rows, n, state.c);
      const fresh = (narrow.latest + 1) * narrow.windowMs;
      if (fresh > this.freshAt) this.freshAt = fresh;
      return;
    }
    for (let row = 0; row < DEPTH; row++) this.#join(this.#cells, this.#rows[row] as number, record, now, rate);
  }

  /** Joins `record` into the cell at `at` of `cells` and extends its slot 0. */
  #join(cells: Float64Array, at: number, record: RuleRecord, now: number, rate?: number[]): void {
    const rule = this.rule;
    let i = at + 1;
    for (let k = 0; k < rule.members.length; k++) {
      const m = rule.members[k] as Algorithm;
      if (rate !== undefined && rate.length > 0 && isRate(m)) {
        joinRateOwn(m, cells, i, memberState(rule, record, k), rate[2 * k] as number, rate[2 * k + 1] as number);
      } else joinMember(m, cells, i, memberState(rule, record, k), now);
      i += memberSlots(m);
    }
    if (rule.ban !== undefined) joinBan(cells, i, (record as unknown[])[rule.members.length] as never, rule.ban);
    const fresh = this.#cellFreshAt(cells, at);
    if (!((cells[at] as number) >= fresh)) cells[at] = fresh;
    if (fresh > this.freshAt) this.freshAt = fresh;
  }

  #cellFreshAt(cells: Float64Array, at: number): number {
    const rule = this.rule;
    let fresh = Number.NEGATIVE_INFINITY;
    let i = at + 1;
    for (const m of rule.members) {
      fresh = Math.max(fresh, memberFreshAt(m, cells, i));
      i += memberSlots(m);
    }
    if (rule.ban !== undefined) fresh = Math.max(fresh, banCellFreshAt(cells, i, rule.ban as BanPolicy));
    return fresh;
  }

  /**
   * Whether the key has something summarised that still matters at `now`: every row's cell is
   * live. (A key with one empty cell was never joined, or all it joined stopped mattering.)
   * Also returns, through `pinUntil`-style use, the earliest instant one of its cells empties.
   */
  present(h1: number, h2: number, now: number): boolean {
    if (!(this.freshAt > now)) return false;
    this.#locate(h1, h2);
    const narrow = this.#narrow;
    if (narrow !== undefined) {
      for (let row = 0; row < DEPTH; row++) if (!(narrow.freshAt(this.#rows[row] as number) > now)) return false;
      return true;
    }
    for (let row = 0; row < DEPTH; row++) if (!((this.#cells[this.#rows[row] as number] as number) > now)) return false;
    return true;
  }

  /** The earliest instant one of the key's cells empties (call after `present` returned true). */
  earliestEmpty(): number {
    let at = Number.POSITIVE_INFINITY;
    const narrow = this.#narrow;
    for (let row = 0; row < DEPTH; row++) {
      const i = this.#rows[row] as number;
      at = Math.min(at, narrow === undefined ? (this.#cells[i] as number) : narrow.freshAt(i));
    }
    return at;
  }

  /**
   * The record a key read back from the summary decides on: its most permissive row (when
   * `present`, after `present` returned true; else nothing summarised still counts), with `own`
   * (what it took since, exact) added on top in scratch space. For rate-based members the row's
   * instant at the first read-back is kept in `bases`, since a backlog added on top of it
   * outlives the cell (see `joinRateOwn`). `better(a, b)`: record `a` admits more than `b`.
   */
  estimate(
    own: RuleRecord,
    rate: number[],
    present: boolean,
    now: number,
    better: (a: RuleRecord, b: RuleRecord) => boolean,
  ): RuleRecord {
    if (this.#narrow !== undefined) return this.#estimateNarrow(this.#narrow, own as FixedWindowState, present, better);
    const scratch = this.#scratch;
    if (present) {
      let best: RuleRecord | undefined;
      let bestAt = 0;
      for (let row = 0; row < DEPTH; row++) {
        const at = this.#rows[row] as number;
        const record = this.#read(this.#cells, at);
        if (best === undefined || better(record, best)) {
          best = record;
          bestAt = at;
        }
      }
      scratch.set(this.#cells.subarray(bestAt, bestAt + this.#slots));
    } else scratch.fill(Number.NaN);
    const rule = this.rule;
    let i = 1;
    for (let k = 0; k < rule.members.length; k++) {
      const m = rule.members[k] as Algorithm;
      if (present && rate.length > 0 && isRate(m) && Number.isNaN(rate[2 * k + 1] as number)) {
        rate[2 * k + 1] = scratch[i] as number;
      }
      i += memberSlots(m);
    }
    this.#join(scratch, 0, own, now, rate);
    return this.#read(scratch, 0);
  }

  /** The record a cell stands for, under the current rule. */
  #read(cells: Float64Array, at: number): RuleRecord {
    const rule = this.rule;
    let i = at + 1;
    const states = rule.members.map((m: Algorithm) => {
      const state = readMember(m, cells, i, m.limit) ?? m.create();
      i += memberSlots(m);
      return state;
    });
    if (rule.bare) return states[0];
    if (rule.ban !== undefined) states.push(readBan(cells, i));
    return states;
  }

  /** Halves the width: cell j absorbs cell j + width/2 (a key's column is its hash masked to the width). */
  fold(now: number): void {
    if (this.#width <= 1) return;
    if (this.#narrow !== undefined) {
      this.shrink(Math.floor(this.#width / 2));
      return;
    }
    const half = this.#width / 2;
    const slots = this.#slots;
    const old = this.#cells;
    const cells = new Float64Array(DEPTH * half * slots);
    for (let row = 0; row < DEPTH; row++) {
      for (let j = 0; j < half; j++) {
        const to = (row * half + j) * slots;
        const a = (row * this.#width + j) * slots;
        const b = a + half * slots;
        cells.set(old.subarray(a, a + slots), to);
        if (!((old[b] as number) > now)) continue;
        if (!((cells[to] as number) > now)) {
          cells.set(old.subarray(b, b + slots), to);
          continue;
        }
        this.#join(cells, to, this.#whole(old, b), now);
      }
    }
    this.#cells = cells;
    this.#width = half;
  }

  /**
   * Adds every cell of `other` (a sketch of the same rule, with the same seed) into this one,
   * folding the wider of the two first: a restore into a store that summarised keys already.
   */
  absorb(other: Sketch, now: number): void {
    if (this.#narrow !== undefined && other.#narrow !== undefined) {
      other.shrink(Math.min(other.width, this.#width));
      this.shrink(other.width);
    }
    while (other.width > this.#width) other.fold(now);
    while (this.#width > other.width) this.fold(now);
    const mine = this.#narrow;
    const theirs = other.#narrow;
    if (mine !== undefined && theirs !== undefined) {
      // Tags are window numbers modulo the tag range: moving to the later `latest` first reads them alike.
      if (theirs.latest > mine.latest) mine.advance(theirs.latest);
      for (let i = 0; i < mine.words.length; i++) mine.joinWord(i, theirs.words[i] as number, theirs);
      if (other.freshAt > this.freshAt) this.freshAt = other.freshAt;
      return;
    }
    const from = other.#cells;
    const cells = this.#cells;
    for (let at = 0; at < cells.length; at += this.#slots) {
      if (!((from[at] as number) > now)) continue;
      if (!((cells[at] as number) > now)) {
        cells.set(from.subarray(at, at + this.#slots), at);
        if ((from[at] as number) > this.freshAt) this.freshAt = from[at] as number;
      } else this.#join(cells, at, other.#whole(from, at), now);
    }
  }

  /** The record a cell of `cells` stands for, whole (every logged entry, not only `limit`): for joining it elsewhere. */
  #whole(cells: Float64Array, at: number): RuleRecord {
    const rule = this.rule;
    let i = at + 1;
    const states = rule.members.map((m) => {
      const s = readMember(m, cells, i, Number.POSITIVE_INFINITY) ?? m.create();
      i += memberSlots(m);
      return s;
    });
    return rule.bare ? states[0] : rule.ban === undefined ? states : [...states, readBan(cells, i)];
  }

  /**
   * Share of cells (0..1) at `now` that would refuse a never-seen key's one unit: every live
   * cell (a float cell's count is not read here), or in the narrow layout those at the limit.
   */
  fill(now: number): number {
    const narrow = this.#narrow;
    if (narrow !== undefined) {
      const limit = (this.rule.members[0] as Algorithm).limit;
      const n = Math.max(Math.floor(now / narrow.windowMs), narrow.latest);
      let full = 0;
      for (const v of narrow.words) if (narrow.countIn(v, n) + 1 > limit) full++;
      return full / narrow.words.length;
    }
    let live = 0;
    const cells = this.#cells;
    for (let i = 0; i < cells.length; i += this.#slots) if ((cells[i] as number) > now) live++;
    return live / (cells.length / this.#slots);
  }

  /** Fills `#rows` with the key's cell offsets: double hashing of the stored fingerprint bits. */
  #locate(h1: number, h2: number): void {
    const g = fmix32(h1 ^ h2 ^ 0x27d4eb2f) | 1;
    const width = this.#width;
    if (this.#narrow !== undefined) {
      // Multiply-high: the hash scaled to any width; at width w/k a key's column is its column at w, divided by k.
      for (let row = 0; row < DEPTH; row++) {
        const column = Math.floor((((h1 + Math.imul(row, g)) >>> 0) * width) / 0x100000000);
        this.#rows[row] = row * width + column;
      }
      return;
    }
    const mask = width - 1;
    for (let row = 0; row < DEPTH; row++) {
      const column = (h1 + Math.imul(row, g)) & mask;
      this.#rows[row] = (row * width + column) * this.#slots;
    }
  }

  /**
   * Narrows a narrow sketch to `width` cells a row (float sketches only fold): each new cell
   * takes the largest of the old cells whose hash ranges meet its own (exactly the pairs 2j,
   * 2j + 1 when halving an even width), so every key's cells still hold at least its count.
   */
  shrink(width: number): void {
    const narrow = this.#narrow;
    const from = this.#width;
    const to = Math.max(1, Math.floor(width));
    if (narrow === undefined || to >= from) return;
    const old = narrow.words;
    const shrunk = new WindowCells(DEPTH * to, narrow.windowMs);
    shrunk.latest = narrow.latest;
    for (let row = 0; row < DEPTH; row++) {
      for (let j = 0; j < to; j++) {
        // Old columns c with [c, c + 1) · 2^32/from meeting [j, j + 1) · 2^32/to.
        const first = Math.floor((j * from) / to);
        const last = Math.ceil(((j + 1) * from) / to) - 1;
        // The larger count: every cell of a key holds at least its count (conservative update).
        for (let c = first; c <= last && c < from; c++) {
          shrunk.joinWord(row * to + j, old[row * from + c] as number, narrow, true);
        }
      }
    }
    this.#narrow = shrunk;
    this.#width = to;
  }

  /** `estimate` in the narrow layout: the most permissive row, with `own` joined on top. */
  #estimateNarrow(
    narrow: WindowCells,
    own: FixedWindowState,
    present: boolean,
    better: (a: RuleRecord, b: RuleRecord) => boolean,
  ): RuleRecord {
    let best: FixedWindowState | undefined;
    if (present) {
      // Rows of one window (the usual case): the smallest count admits most, no need to ask `better`.
      const first = narrow.words[this.#rows[0] as number] as number;
      const n = first === 0 ? Number.NaN : narrow.windowOf(first);
      let least = Number.POSITIVE_INFINITY;
      for (let row = 0; row < DEPTH && least >= 0; row++) {
        const v = narrow.words[this.#rows[row] as number] as number;
        if (v === 0 || narrow.windowOf(v) !== n) least = -1;
        else least = Math.min(least, narrow.countIn(v, n));
      }
      if (least >= 0) best = { w: n * narrow.windowMs, c: least };
      else {
        for (let row = 0; row < DEPTH; row++) {
          const record = narrow.read(this.#rows[row] as number) ?? (this.rule.members[0] as Algorithm).create();
          if (best === undefined || better(record, best)) best = record as FixedWindowState;
        }
      }
    }
    const out: FixedWindowState = best === undefined ? { w: Number.NEGATIVE_INFINITY, c: 0 } : { ...best };
    if (own.c > 0) {
      if (out.c === 0 || own.w > out.w) {
        out.w = own.w;
        out.c = own.c;
      } else if (own.w === out.w) out.c += own.c;
    }
    return out;
  }

  /**
   * Loads narrow cells written by `toBase64`; or float cells of the same width (a snapshot from
   * before the narrow layout), converted: each live cell's count under its window.
   */
  #loadNarrow(bytes: Buffer): boolean {
    const narrow = this.#narrow as WindowCells;
    if (narrow.load(bytes)) {
      this.freshAt = narrow.latest === Number.NEGATIVE_INFINITY ? this.freshAt : (narrow.latest + 1) * narrow.windowMs;
      return true;
    }
    const slots = this.#slots;
    if (bytes.byteLength !== narrow.words.length * slots * 8) return false;
    const cells = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    const W = narrow.windowMs;
    for (let i = 0; i < cells.length; i += slots) {
      if (!Number.isNaN(cells[i] as number) && (cells[i + 2] as number) > 0)
        narrow.advance(Math.round((cells[i + 1] as number) / W));
    }
    for (let i = 0, cell = 0; i < cells.length; i += slots, cell++) {
      const w = cells[i + 1] as number;
      const c = cells[i + 2] as number;
      if (Number.isNaN(cells[i] as number) || !(c > 0)) continue;
      const n = Math.round(w / W);
      // Too old to tag (its window ended long ago): nothing it holds still matters.
      if (n < narrow.latest - 1024) continue;
      narrow.words[cell] = WindowCells.encode(n, c);
    }
    if (narrow.latest > Number.NEGATIVE_INFINITY) this.freshAt = (narrow.latest + 1) * W;
    return true;
  }
}

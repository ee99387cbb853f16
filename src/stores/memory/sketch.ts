/**
 * The last tier behind `maxKeys`: a count-min-style summary of whole records for one rule (one
 * table), sized from the store's one summary budget. A record pushed out of the exact tiers is
 * joined into one cell per row (`DEPTH` rows of `width` cells, chosen from the key's
 * fingerprint) by its *maximum* (rules-max-join.ts): a cell stands for the largest of the
 * states joined into it, so it dominates each of them (admits less) and a cell shared by many
 * one-request keys still reads one request (issue 34: summed, 700 flooded rules' few cells each
 * read full). Reading a key back takes its most permissive row, which still dominates the key's
 * own record, and adds what it took since on top (a sum: those are its own units); pushed out
 * again it joins that whole estimate (`addReadBack`). A key can be over-counted, never reset.
 *
 * Slot 0 of a cell is the latest instant anything in it stops mattering: a cell past it is
 * empty again, and a key with an empty cell in any row was never summarised (exact: fresh).
 * When the store's budget must be shared with a new rule, a sketch folds in half (cell j joins
 * cell j + width/2), which is conservative too.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { BanPolicy } from "../../core/ban.ts";
import { decideRule } from "../../core/decide-rule.ts";
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
import { maxJoinMember } from "./rules-max-join.ts";

/** Rows of every sketch: a key is over-counted only if all of its cells are shared with heavier keys. */
export const DEPTH = 4;

/** Float64 slots of one cell of `rule`. */
export function cellSlots(rule: CompiledRule): number {
  let slots = 1;
  for (const m of rule.members) slots += memberSlots(m);
  if (rule.ban !== undefined) slots += BAN_SLOTS;
  return slots;
}

/** Bytes a sketch of `width` cells per row takes for `rule`. */
export function sketchBytes(rule: CompiledRule, width: number): number {
  return DEPTH * width * cellSlots(rule) * 8;
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
  /** Lookups of keys in this summary (`present` calls), halved with `fullReads` every 65,536. */
  probes = 0;
  /** Keys read back from this summary (`noteReadBack` calls). */
  reads = 0;
  /** Of the lookups, keys read back whose every row refuses a request (see `noteReadBack`). */
  fullReads = 0;
  /** A cell's worth of scratch space (estimates are built here, never in the cells). */
  readonly #scratch: Float64Array;

  /** `width` cells per row (a power of two). */
  constructor(rule: CompiledRule, width: number) {
    this.rule = rule;
    this.#width = 2 ** Math.ceil(Math.log2(Math.max(1, width)));
    this.#slots = cellSlots(rule);
    this.#cells = new Float64Array(DEPTH * this.#width * this.#slots).fill(Number.NaN);
    this.#scratch = new Float64Array(this.#slots);
  }

  /** Cells per row (a power of two). */
  get width(): number {
    return this.#width;
  }

  /** Bytes held by the cells. */
  get bytes(): number {
    return this.#cells.byteLength;
  }

  /** The cells as base64 (for snapshots), with `extra` records of (h1, h2, record) added to a copy first. */
  toBase64(
    extra: Array<[number, number, RuleRecord, { rate: number[] }]> = [],
    now = Number.NEGATIVE_INFINITY,
  ): string {
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
   * Joins `record` (as of `now`, an exact record or a bound of one) into the key's cell of every
   * row by its maximum. With `rate` (per member a debt and a base, see approx.ts `Approx`),
   * `record` is what a read-back key took since its read-back: its whole estimate is joined
   * (as `addReadBack` does, choosing the row by the most remaining units).
   */
  add(h1: number, h2: number, record: RuleRecord, now: number, rate?: number[]): void {
    if (rate !== undefined) {
      this.addReadBack(h1, h2, record, rate, now, (a, b) => this.#looser(a, b, now));
      return;
    }
    this.#locate(h1, h2);
    for (let row = 0; row < DEPTH; row++) this.#maxJoin(this.#cells, this.#rows[row] as number, record, now);
  }

  /**
   * Joins a key read back from this summary (`own`: what it took since, `rate`: its debts) as
   * it goes: its estimate now (what it decides on, which dominates its whole state) into every
   * row by its maximum. Never only `own` (the rows' other keys are not its) and never the
   * estimate summed in (that would count the row twice).
   */
  addReadBack(
    h1: number,
    h2: number,
    own: RuleRecord,
    rate: number[],
    now: number,
    better: (a: RuleRecord, b: RuleRecord) => boolean,
  ): void {
    const present = this.present(h1, h2, now);
    this.estimate(own, rate, present, now, better);
    const whole = this.#whole(this.#scratch, 0);
    this.#locate(h1, h2);
    for (let row = 0; row < DEPTH; row++) this.#maxJoin(this.#cells, this.#rows[row] as number, whole, now);
  }

  /**
   * The whole state a key read back from this summary decides on now (`own`: what it took since,
   * `rate`: its debts): a bound of its record, for the compact tier (victim.ts) or a snapshot.
   */
  boundOf(h1: number, h2: number, own: RuleRecord, rate: number[], now: number): RuleRecord {
    const present = this.present(h1, h2, now);
    this.estimate(own, rate, present, now, (a, b) => this.#looser(a, b, now));
    return this.#whole(this.#scratch, 0);
  }

  /** Joins `record` into the cell at `at` of `cells` by its maximum (the ban's strikes add up) and extends its slot 0. */
  #maxJoin(cells: Float64Array, at: number, record: RuleRecord, now: number): void {
    const rule = this.rule;
    let i = at + 1;
    for (let k = 0; k < rule.members.length; k++) {
      const m = rule.members[k] as Algorithm;
      maxJoinMember(m, cells, i, memberState(rule, record, k), now);
      i += memberSlots(m);
    }
    if (rule.ban !== undefined) joinBan(cells, i, (record as unknown[])[rule.members.length] as never, rule.ban);
    const fresh = this.#cellFreshAt(cells, at);
    if (!((cells[at] as number) >= fresh)) cells[at] = fresh;
    if (fresh > this.freshAt) this.freshAt = fresh;
  }

  /** Whether record `a` admits more than `b` for one unit at `now` (allowed first, then more remaining, then sooner). */
  #looser(a: RuleRecord, b: RuleRecord, now: number): boolean {
    const da = decideRule(this.rule, a, now, 1, "peek");
    const db = decideRule(this.rule, b, now, 1, "peek");
    if (da.allowed !== db.allowed) return da.allowed;
    if (da.remaining !== db.remaining) return da.remaining > db.remaining;
    return da.retryAfterMs < db.retryAfterMs;
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
    if (++this.probes >= 65536) {
      // Recent traffic counts: both halve (the ratio stays, old figures fade).
      this.probes /= 2;
      this.fullReads /= 2;
    }
    if (!(this.freshAt > now)) return false;
    this.#locate(h1, h2);
    for (let row = 0; row < DEPTH; row++) if (!((this.#cells[this.#rows[row] as number] as number) > now)) return false;
    return true;
  }

  /**
   * Notes a key read back from this summary (after `present` returned true for it): whether
   * every one of its rows refuses a request of 1 unit, so that it is refused unless its own
   * exact record would be too (counted in `fullReads`).
   */
  noteReadBack(now: number): void {
    this.reads++;
    for (let row = 0; row < DEPTH; row++) {
      if (decideRule(this.rule, this.#read(this.#cells, this.#rows[row] as number), now, 1, "peek").allowed) return;
    }
    this.fullReads++;
  }

  /**
   * The share of lookups (`present` calls: requests of keys past the exact tiers) that were
   * read back to rows that all refuse: at most that share of them is refused for want of room
   * (a key that spent its own limit reads full rows too). 0 until 256 lookups.
   */
  readBackBound(): number {
    return this.probes < 256 ? 0 : this.fullReads / this.probes;
  }

  /** The earliest instant one of the key's cells empties (call after `present` returned true). */
  earliestEmpty(): number {
    let at = Number.POSITIVE_INFINITY;
    for (let row = 0; row < DEPTH; row++) at = Math.min(at, this.#cells[this.#rows[row] as number] as number);
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

  /** Halves the width: cell j joins cell j + width/2 by its maximum (a key's column is its hash masked to the width). */
  fold(now: number): void {
    if (this.#width <= 1) return;
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
        this.#maxJoin(cells, to, this.#whole(old, b), now);
      }
    }
    this.#cells = cells;
    this.#width = half;
  }

  /**
   * Joins every cell of `other` (a sketch of the same rule, with the same seed) into this one,
   * folding the wider of the two first: a restore into a store that summarised keys already.
   */
  absorb(other: Sketch, now: number): void {
    while (other.width > this.#width) other.fold(now);
    while (this.#width > other.width) this.fold(now);
    const from = other.#cells;
    const cells = this.#cells;
    for (let at = 0; at < cells.length; at += this.#slots) {
      if (!((from[at] as number) > now)) continue;
      if (!((cells[at] as number) > now)) {
        cells.set(from.subarray(at, at + this.#slots), at);
        if ((from[at] as number) > this.freshAt) this.freshAt = from[at] as number;
      } else this.#maxJoin(cells, at, other.#whole(from, at), now);
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
   * Share of cells (0..1, sampled: at most `sample` of them) that refuse a request of 1 unit at
   * `now`: the chance a key's row would refuse it whatever the key itself took.
   */
  full(now: number, sample = 4096): number {
    const cells = this.#cells;
    const n = cells.length / this.#slots;
    const stride = Math.max(1, Math.floor(n / sample));
    let seen = 0;
    let full = 0;
    for (let c = 0; c < n; c += stride) {
      seen++;
      const at = c * this.#slots;
      if (!((cells[at] as number) > now)) continue;
      if (!decideRule(this.rule, this.#read(cells, at), now, 1, "peek").allowed) full++;
    }
    return seen === 0 ? 0 : full / seen;
  }

  /** Share of live cells (0..1) at `now`: the chance a never-seen key's row is occupied. */
  fill(now: number): number {
    let live = 0;
    const cells = this.#cells;
    for (let i = 0; i < cells.length; i += this.#slots) if ((cells[i] as number) > now) live++;
    return live / (cells.length / this.#slots);
  }

  /** Fills `#rows` with the key's cell offsets: double hashing of the stored fingerprint bits. */
  #locate(h1: number, h2: number): void {
    const g = fmix32(h1 ^ h2 ^ 0x27d4eb2f) | 1;
    const mask = this.#width - 1;
    for (let row = 0; row < DEPTH; row++) {
      const column = (h1 + Math.imul(row, g)) & mask;
      this.#rows[row] = (row * this.#width + column) * this.#slots;
    }
  }
}

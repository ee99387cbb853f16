/**
 * The bounded summary behind `maxKeys`: a count-min-style sketch of whole records. A record
 * pushed out of the exact table is joined into one cell per row (`depth` rows, `width` cells
 * each, chosen by independent hashes of the key); each cell keeps a state that dominates every
 * record joined into it (later windows, larger counts, later arrival times: see each
 * algorithm's `summary`). Reading a key back takes its most permissive row, which still
 * dominates the key's own record: a key can be over-counted, never reset. Memory is fixed at
 * construction however many keys pass through.
 *
 * Slot 0 of a cell is the latest instant any record in it stops mattering: a cell past it is
 * empty again, and a key with an empty cell in any row was never summarised (exact: fresh).
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { BanState } from "../../ban.ts";
import { banState, type CompiledRule, memberState, type RuleRecord } from "../../rule.ts";

/** Rows of every sketch: a key is over-counted only if all of its cells are shared with heavier keys. */
const DEPTH = 4;

/** A random seed per sketch, so nobody can compute in advance which keys share cells. */
const randomSeed = () => (Math.random() * 0x100000000) >>> 0;

/** A fixed-size, conservative summary of the records of one rule. */
export class Sketch {
  /**
   * The rule the cells are read and joined with: the table's current one (a rule update that
   * keeps the shape keeps the sketch, and a new limit must apply to it too).
   */
  rule: CompiledRule;
  /** The hash seed (saved in snapshots: it decides which cells a key reads). */
  readonly seed: number;
  readonly #width: number;
  readonly #slots: number;
  readonly #cells: Float64Array;
  readonly #index = new Int32Array(DEPTH);

  /** `width` cells per row (rounded up to a power of two); `seed` to read cells a snapshot saved. */
  constructor(rule: CompiledRule, width: number, seed: number = randomSeed()) {
    this.rule = rule;
    this.seed = seed;
    this.#width = 2 ** Math.ceil(Math.log2(Math.max(2, width)));
    let slots = 1;
    for (const m of rule.members) slots += m.summary.slots;
    if (rule.ban !== undefined) slots += 3;
    this.#slots = slots;
    this.#cells = new Float64Array(DEPTH * this.#width * slots).fill(Number.NaN);
  }

  /** The cell width per row (a power of two). */
  get width(): number {
    return this.#width;
  }

  /** The cells as base64 (for snapshots). */
  toBase64(): string {
    return Buffer.from(this.#cells.buffer, this.#cells.byteOffset, this.#cells.byteLength).toString("base64");
  }

  /** Loads cells written by `toBase64` for the same rule and width; false (nothing loaded) if they do not fit. */
  load(base64: string): boolean {
    const bytes = Buffer.from(base64, "base64");
    if (bytes.byteLength !== this.#cells.byteLength) return false;
    new Uint8Array(this.#cells.buffer, this.#cells.byteOffset, this.#cells.byteLength).set(bytes);
    return true;
  }

  /** Bytes held by the cells (fixed). */
  get bytes(): number {
    return this.#cells.byteLength;
  }

  /** Joins `record` (which stops mattering at `freshAt`) into the key's cell of every row. */
  add(key: string, record: RuleRecord, freshAt: number): void {
    this.#locate(key);
    const cells = this.#cells;
    const rule = this.rule;
    for (let row = 0; row < DEPTH; row++) {
      let at = this.#index[row] as number;
      if (!((cells[at] as number) >= freshAt)) cells[at] = freshAt;
      at++;
      rule.members.forEach((m: Algorithm, i) => {
        m.summary.join(cells, at, memberState(rule, record, i));
        at += m.summary.slots;
      });
      const ban = banState(rule, record);
      if (ban !== undefined) joinBan(cells, at, ban);
    }
  }

  /**
   * The records the rows hold for `key` at `now` (one per row), or undefined when some row's
   * cell is empty: then the key was never summarised, or everything summarised with it no
   * longer matters, and a fresh record is exact.
   */
  read(key: string, now: number): RuleRecord[] | undefined {
    this.#locate(key);
    const cells = this.#cells;
    for (let row = 0; row < DEPTH; row++) {
      if (!((cells[this.#index[row] as number] as number) > now)) return undefined;
    }
    const rule = this.rule;
    const records: RuleRecord[] = [];
    for (let row = 0; row < DEPTH; row++) {
      let at = (this.#index[row] as number) + 1;
      const states = rule.members.map((m: Algorithm) => {
        const state = m.summary.read(cells, at) ?? m.create();
        at += m.summary.slots;
        return state;
      });
      if (rule.bare) {
        records.push(states[0]);
        continue;
      }
      // The record layout of src/rule.ts: the members' states, then the ban's.
      if (rule.ban !== undefined) states.push(readBan(cells, at));
      records.push(states);
    }
    return records;
  }

  /** Fills `#index` with the key's cell offsets: two FNV-1a hashes, combined per row. */
  #locate(key: string): void {
    const seed = this.seed;
    let h1 = 0x811c9dc5 ^ seed;
    let h2 = 0x01000193 ^ Math.imul(seed, 0x9e3779b1);
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    }
    h2 = (h2 ^ (h2 >>> 15)) | 1;
    const mask = this.#width - 1;
    for (let row = 0; row < DEPTH; row++) {
      const column = (h1 + Math.imul(row, h2)) & mask;
      this.#index[row] = (row * this.#width + column) * this.#slots;
    }
  }
}

/** Joins a ban state: the later ban, and the larger count of the later counting span. */
function joinBan(cells: Float64Array, at: number, ban: BanState): void {
  if (!((cells[at + 2] as number) >= ban.until)) cells[at + 2] = ban.until;
  const since = cells[at] as number;
  if (Number.isNaN(since) || ban.since > since) {
    cells[at] = ban.since;
    cells[at + 1] = ban.n;
  } else if (ban.since === since && ban.n > (cells[at + 1] as number)) cells[at + 1] = ban.n;
}

function readBan(cells: Float64Array, at: number): BanState {
  const since = cells[at] as number;
  const until = cells[at + 2] as number;
  return {
    since: Number.isNaN(since) ? Number.NEGATIVE_INFINITY : since,
    n: Number.isNaN(since) ? 0 : (cells[at + 1] as number),
    until: Number.isNaN(until) ? Number.NEGATIVE_INFINITY : until,
  };
}

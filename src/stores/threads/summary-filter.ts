/**
 * Which keys a SharedMemoryStore's summary may hold: a Bloom filter of the keys pushed out of the
 * table into it, in two generations. A key the filter does not hold was never summarised (since
 * the filter last forgot anything, which it does only for state that no longer matters), so its
 * fresh record is exact: the summary is read only for keys the filter holds (and those a false
 * positive lets through, which read their cells as before).
 *
 * Why: a key's own cells are shared with other keys (summary.ts), so once enough keys were pushed
 * out, every never-seen key finds all of its cells live and is read back over-counted; a flood
 * of keys spending their whole limit then refused most brand-new keys (18.5% of them with
 * `maxKeys: 100_000` under 200,000 such keys). Bits are far cheaper than cells: 16 bits per key
 * of `maxKeys` in each generation (4 bytes a key in all), 16 set per key (in a record part and a
 * key part: `RECORD_RUNS`).
 *
 * Never a false negative while it matters (a key the summary holds live state for, read as never
 * summarised, would start over: over-admitted):
 * - A join sets the key's bits in the current generation before the bucket that no longer holds
 *   the key is published, so a thread that misses the key in the table finds its bits.
 * - A generation is emptied only when it is the older one, and every rule's latest fresh-at
 *   joined into it (kept per generation, raised by compare-and-swap before the bits are set) is
 *   past, by `RECLAIM_MARGIN_MS`, on that rule's clock as this thread knows it (summary.ts).
 * - A join that saw another generation current than the one it set its bits in (a rotation ran
 *   meanwhile, and may have emptied that one) sets them again in the current one, until the
 *   generation it started in is still current after it: every interleaving with a rotation leaves
 *   the bits where the next emptying checks the key's fresh-at first.
 * - One thread rotates at a time (a busy word taken by compare-and-swap). A thread that dies
 *   while rotating leaves it taken: the filter then fills up and lets more keys through to
 *   their cells (as before it existed), never fewer.
 */

import { filterProbes, PROBES } from "../compact/filter-probes.ts";
import { NO_INSTANT, raiseInstant, readInstant } from "./instant-word.ts";
import { type FilterSlots, type Layout, SPENT_FILTER, SUMMARY_FILTER, type Views } from "./layout.ts";

/**
 * Runs of PROBES probes each a key sets in a generation: `RECORD_RUNS` hashed with its rule into
 * the record part (half the bits), `KEY_RUNS` hashed without it into the key part (the other
 * half). A lookup needs both. Why the key part: under many rules a flood of keys is many times
 * more records than keys (200 rules × 10,000 keys spending their limit: 2,000,000 records, six
 * times the filter), so the record part saturates and every brand-new key read back from its
 * rules' cells (43.6% of them refused), while the key part holds only 10,000 keys and still
 * tells a brand-new key apart (0.06% false positives at half its capacity in keys, whatever the
 * records). With one rule both parts hold the same keys, and a lookup's false positives are
 * about those of one filter of 16 probes (0.07% at capacity: 16 bits a key). Both filters keep
 * this layout: with the summary filter at one run of 4 probes over all its bits (hashed with
 * the rule), 8 rules flooded by 200,000 one-request keys past `maxKeys` at half the honest
 * records refused 20% of honest requests (0% with the key part, every algorithm).
 */
const RECORD_RUNS = 2;
/** Runs of the key part. */
const KEY_RUNS = 2;
/** What a run adds to the rule index it hashes with. */
const RUN_STRIDE = 0x4000;
/** The rule index the key part's first run hashes with: below every rule's (which start at 0). */
const KEY_PART = -1;

/** A thread's view of the shared filter. */
export class SummaryFilter {
  readonly #I: Int32Array;
  readonly #W: BigInt64Array;
  readonly #layout: Layout;
  /** Int32 words of one generation. */
  readonly #words: number;
  readonly #bits: number;
  /** Joins a generation takes before it is rotated (when the older one can be emptied). */
  readonly #capacity: number;
  /** The probes of the last key hashed (bit indices). */
  readonly #probes: Int32Array;
  /** `#probes` in runs of PROBES, one per `filterProbes` call: `RECORD_RUNS`, then the key part's. */
  readonly #runs: Int32Array[];
  /** Bits of a generation's record part (the key part is the rest, from this bit on). */
  readonly #recordBits: number;
  /** I: the first generation's bits. */
  readonly #base: number;
  /** W: per generation and rule, the latest fresh-at joined. */
  readonly #freshBase: number;
  /** Header slots of this filter. */
  readonly #slots: FilterSlots;

  /** The summary filter, or with `spent` the filter of keys given up spent (layout.ts `SPENT_FILTER`); both keep the same probes. */
  constructor(views: Views, layout: Layout, spent = false) {
    this.#I = views.I;
    this.#W = views.W;
    this.#layout = layout;
    this.#base = spent ? layout.spentFilterBase : layout.filterBase;
    this.#freshBase = spent ? layout.spentFreshBase : layout.filterFreshBase;
    this.#slots = spent ? SPENT_FILTER : SUMMARY_FILTER;
    // A false positive of the spent filter reads a brand-new key back as spent, in each rule a
    // request goes through: 4 probes at 22 bits a key refused 10% of brand-new keys under 200
    // rules (a rule's false positives compound). 12 (about the best at 16 bits a key) cost only
    // lookups of keys that miss the table, which stop at the first clear bit.
    const runs = RECORD_RUNS + KEY_RUNS;
    this.#probes = new Int32Array(PROBES * runs);
    this.#runs = Array.from({ length: runs }, (_, r) => this.#probes.subarray(r * PROBES, (r + 1) * PROBES));
    this.#words = layout.filterBits / 32;
    this.#bits = layout.filterBits;
    this.#recordBits = 32 * Math.floor(layout.filterBits / 64);
    this.#capacity = layout.filterBits / 16;
  }

  /** Fills `#probes` for the key (h1, h2) of rule `rule`: double hashing, decorrelated from its cells' columns. */
  #hash(rule: number, h1: number, h2: number): void {
    const record = this.#recordBits;
    // Each record run as the key of another rule index (past every table index: bucket.ts MAX_TABLE_INDEX).
    for (let r = 0; r < RECORD_RUNS; r++) {
      filterProbes(rule + r * RUN_STRIDE, h1, h2, record, this.#runs[r] as Int32Array);
    }
    // The key part's runs as keys of rule indices below every rule's, from bit `record` on.
    for (let r = RECORD_RUNS; r < RECORD_RUNS + KEY_RUNS; r++) {
      const run = this.#runs[r] as Int32Array;
      filterProbes(KEY_PART - (r - RECORD_RUNS) * RUN_STRIDE, h1, h2, this.#bits - record, run);
      for (let i = 0; i < run.length; i++) run[i] = (run[i] as number) + record;
    }
  }

  /** Whether generation `gen` holds every probe. */
  #holds(gen: number): boolean {
    const base = this.#base + gen * this.#words;
    for (let i = 0; i < this.#probes.length; i++) {
      const bit = this.#probes[i] as number;
      if ((Atomics.load(this.#I, base + (bit >>> 5)) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /** Whether the summary may hold state of the key (h1, h2) of rule `rule` (false: it never did, or what it held no longer matters). */
  mayHold(rule: number, h1: number, h2: number): boolean {
    this.#hash(rule, h1, h2);
    return this.#holds(0) || this.#holds(1);
  }

  /**
   * Notes that the key (h1, h2) of rule `rule` was joined into the summary with state fresh
   * again at `freshAt` (call before the bucket without the key is published). Returns whether
   * it is time to try `rotate` (the current generation is full).
   */
  add(rule: number, h1: number, h2: number, freshAt: number): boolean {
    const I = this.#I;
    this.#hash(rule, h1, h2);
    for (;;) {
      const epoch = Atomics.load(I, this.#slots.epoch);
      const gen = epoch & 1;
      // The fresh-at first: an emptying that sees these bits sees it too (NaN is kept as never).
      raiseInstant(this.#W, this.#freshBase + gen * this.#layout.maxRules + rule, freshAt);
      const base = this.#base + gen * this.#words;
      for (let i = 0; i < this.#probes.length; i++) {
        const bit = this.#probes[i] as number;
        Atomics.or(I, base + (bit >>> 5), 1 << (bit & 31));
      }
      const joins = Atomics.add(I, this.#slots.joins0 + gen, 1) + 1;
      // Full: a rotation is tried then, and every 256 joins after while the older generation
      // still matters (each try reads every rule's fresh-at).
      if (Atomics.load(I, this.#slots.epoch) === epoch)
        return joins >= this.#capacity && ((joins - this.#capacity) & 255) === 0;
    }
  }

  /**
   * Empties the older generation and makes it the current one, when every rule's latest fresh-at
   * joined into it satisfies `past(rule, freshAt)` (its state no longer matters on that rule's
   * clock) and no other thread is rotating. Returns whether it rotated.
   */
  rotate(past: (rule: number, freshAt: number) => boolean): boolean {
    const I = this.#I;
    const W = this.#W;
    const { maxRules } = this.#layout;
    const filterBase = this.#base;
    const slots = this.#slots;
    const epoch = Atomics.load(I, this.#slots.epoch);
    const old = (epoch & 1) ^ 1;
    const fresh = this.#freshBase + old * maxRules;
    for (let r = 0; r < maxRules; r++) {
      const at = readInstant(W, fresh + r);
      if (at !== Number.NEGATIVE_INFINITY && !past(r, at)) return false;
    }
    if (Atomics.compareExchange(I, slots.busy, 0, 1) !== 0) return false;
    // Another thread rotated between the check and the busy word: its older generation is a new one.
    if (Atomics.load(I, slots.epoch) !== epoch) {
      Atomics.store(I, slots.busy, 0);
      return false;
    }
    I.fill(0, filterBase + old * this.#words, filterBase + (old + 1) * this.#words);
    for (let r = 0; r < maxRules; r++) Atomics.store(W, fresh + r, NO_INSTANT);
    Atomics.store(I, slots.joins0 + old, 0);
    Atomics.add(I, slots.epoch, 1);
    Atomics.store(I, slots.busy, 0);
    return true;
  }
}

/**
 * The options of a SharedMemoryStore, checked, and the sizes of its buffer derived from them.
 */

import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError } from "../../core/errors.ts";
import { checkOptions } from "../../core/options.ts";
import { MAX_TABLE_INDEX } from "../compact/bucket.ts";
import { randomSeed } from "../compact/fingerprint.ts";
import { blockBytes } from "../compact/shared-table.ts";
import { MAX_MEMORY_BYTES } from "../compact/shared-word.ts";
import { DEPTH, layoutOf, type Params, SUMMARY_WORDS } from "./layout.ts";

/** Options of {@link SharedMemoryStore}. */
export interface SharedMemoryStoreOptions {
  /** Keys held exactly (the table is sized for it; memory is fixed at construction). */
  maxKeys: number;
  /**
   * 8-byte words of each key's record (default 6). A rule needs: fixed-window 2, sliding-window
   * 3, token-bucket 2, gcra and leaky-bucket 3, sliding-log 1 + limit, a ban 3 (composites: the
   * sum); a rule that needs more is refused when it is bound.
   */
  recordWords?: number;
  /**
   * Distinct rules (id and shape) the store can hold (default 64). Each rule allowed takes
   * 4,548 + 32 × `summaryWidth` bytes whether or not it is ever bound (docs/threads.md, "Memory").
   */
  maxRules?: number;
  /** Hash seed (default: random). Fixed in tests so that which keys share a bucket replays exactly. */
  seed?: number;
  /**
   * Cells per row of each rule's summary, a power of two (default: maxKeys / 16, within
   * 64..1024, and no wider than keeps every rule's cell words within an eighth of the budget;
   * with more than 64 rules allowed, down to 16: docs/threads.md, "Options").
   */
  summaryWidth?: number;
  /**
   * Bytes for rule identities and specs, shared by all threads (default: 256 per `maxRules`, at
   * least 65,536). A named rule's identity and spec take about 100-160 bytes, and each spec
   * change its spec text again (about 80 bytes); a full arena is a StoreError at bind.
   */
  ruleBytes?: number;
  /**
   * Bytes of the whole store (default: 2,400 per `maxKeys`, at most 24 MiB, as MemoryStore's
   * budget, and never less than the least `maxKeys`, `maxRules` and `ruleBytes` need: the
   * formula in docs/threads.md, "Memory"). What `maxKeys` leaves goes
   * about 7/10 to more buckets of the table (keys held exactly past `maxKeys`), 1/10 to the
   * summary pool (up to every rule's cells), 1/10 to the summary filter and 1/10 to the spent
   * filter (summary.ts).
   */
  maxBytes?: number;
}

/** Keys per bucket of 8 the table is sized for at `maxKeys` (see `paramsOf`). */
export const KEYS_PER_BUCKET = 3;

const LIMITS = {
  maxKeys: [1, 2 ** 26],
  recordWords: [1, 4096],
  // Table indices are rule index + 1 and must fit an entry's 15 bits.
  maxRules: [1, MAX_TABLE_INDEX - 1],
  summaryWidth: [16, 65536],
  ruleBytes: [1024, 2 ** 30],
  maxBytes: [1, MAX_MEMORY_BYTES],
} as const;

/**
 * Default `ruleBytes` per rule of `maxRules` (and its least): a named rule's identity and spec
 * take 96 bytes (gcra, name `r999`) to 154 (a 46-character name), a ban 148, a composite of two
 * known by its spec 294; 256 leaves room for a spec change or a longer name each, and the least
 * keeps the default up to 256 rules what it was.
 */
export const RULE_TEXT_BYTES = 256;
const LEAST_RULE_BYTES = 65536;

/** Rules a store holds by default. */
const DEFAULT_MAX_RULES = 64;

/** The narrowest rows the default gives (only where the budget binds: many rules on few keys). */
export const LEAST_WIDTH = 16;

/** The default budget per key of `maxKeys`, and its ceiling (MemoryStore's: memory-store.ts). */
const BYTES_PER_KEY = 2400;
const DEFAULT_MAX_BYTES = 24 * 2 ** 20;

/**
 * @internal A `maxBytes` that sizes the store for `maxKeys` alone (no room past it): tests use
 * it to overflow the table with few keys.
 */
export const LEAST_BYTES = 1;

/** Validates the options and sizes the buffer; ArgumentError naming the option that is wrong. */
export function paramsOf(options: SharedMemoryStoreOptions): Params {
  checkOptions(options, "SharedMemoryStore", [
    "maxKeys",
    "recordWords",
    "maxRules",
    "summaryWidth",
    "ruleBytes",
    "seed",
    "maxBytes",
  ]);
  const { seed } = options;
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)) {
    throw new ArgumentError(
      `SharedMemoryStore: \`seed\` must be an integer from 0 to 2^32 - 1 (got ${describeValue(seed)})`,
    );
  }
  for (const [name, [min, max]] of Object.entries(LIMITS)) {
    const value = (options as unknown as Record<string, unknown>)[name];
    if (value === undefined && name !== "maxKeys") continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new ArgumentError(
        `SharedMemoryStore: \`${name}\` must be an integer from ${min} to ${max} (got ${describeValue(value)})`,
      );
    }
  }
  const { maxKeys, recordWords = 6, maxRules = DEFAULT_MAX_RULES } = options;
  // The rule texts follow maxRules: a fixed 65,536 held about 680 named rules, so a store allowed
  // 1,000 refused binding part-way (a StoreError from a decision, not the constructor).
  const ruleBytes = options.ruleBytes ?? Math.max(LEAST_RULE_BYTES, RULE_TEXT_BYTES * maxRules);
  const summaryWidth = options.summaryWidth ?? defaultWidth(maxKeys, maxRules, options.maxBytes);
  if (pow2(summaryWidth) !== summaryWidth) {
    throw new ArgumentError(`SharedMemoryStore: \`summaryWidth\` must be a power of two (got ${summaryWidth})`);
  }
  // Three keys per bucket of 8 on average at maxKeys: a bucket overflows (and summarises a key)
  // before then for about 1 bucket in 260 (Poisson tail P(X ≥ 9) for a mean of 3), far fewer
  // below; every bucket holds a block, so fuller buckets would cost less memory and more of that.
  const buckets = Math.max(16, Math.ceil(maxKeys / KEYS_PER_BUCKET));
  // Blocks: one per bucket, one private block per thread, and what threads that died or ended
  // without close() kept (one each).
  const blocks = buckets + Math.max(256, buckets >> 4);
  const params: Params = {
    buckets,
    recordWords,
    blocks,
    summaryBlocks: Math.min(maxRules * DEPTH * summaryWidth, 4 * DEPTH * summaryWidth) + 256,
    maxRules,
    summaryWidth,
    arenaBytes: ruleBytes,
    // Random by default, so no one can aim keys at one bucket; fixed in tests to replay exactly.
    seed: (seed === undefined ? randomSeed() : seed) | 0,
    maxKeys,
    filterKeys: maxKeys,
  };
  const keyBudget = Math.min(DEFAULT_MAX_BYTES, maxKeys * BYTES_PER_KEY);
  // Many rules on few keys: where the least the store needs passes the default budget, rows
  // narrower than 64 (down to LEAST_WIDTH) while they take more than an eighth of that least.
  // Rows of 64 cells took 2 KB a rule whatever the budget (maxKeys 1,000 with maxRules 500:
  // 3.84 MB against 2.4 MB); past the pool's few rules' cells a rule's pushed-out keys join its
  // 16 overflow cells anyway, so narrower rows cost little there. A store whose table alone
  // passes the budget (maxKeys past ~100,000) keeps its rows: they are a small part of it; so do
  // stores allowed the default 64 rules or fewer (tiny maxKeys: the rows every test measured).
  const narrow =
    options.summaryWidth === undefined &&
    maxRules > DEFAULT_MAX_RULES &&
    (options.maxBytes === undefined || options.maxBytes === LEAST_BYTES);
  if (narrow) {
    for (let least = layoutOf(params).bytes; params.summaryWidth > LEAST_WIDTH && least > keyBudget; ) {
      if (8 * maxRules * DEPTH * params.summaryWidth * CELL_WORDS_SHARE <= least) break;
      params.summaryWidth /= 2;
      params.summaryBlocks = Math.min(maxRules * DEPTH * params.summaryWidth, 4 * DEPTH * params.summaryWidth) + 256;
      least = layoutOf(params).bytes;
    }
  }
  const cells = maxRules * DEPTH * params.summaryWidth;
  const summaryBlocks = params.summaryBlocks;
  const least = layoutOf(params).bytes;
  if (options.maxBytes === LEAST_BYTES) return params;
  if (options.maxBytes !== undefined && options.maxBytes < least) {
    throw new ArgumentError(
      `SharedMemoryStore: \`maxBytes\` ${options.maxBytes} is less than the ${least} bytes { maxKeys: ${maxKeys}, ` +
        `recordWords: ${recordWords}, maxRules: ${maxRules} } need; raise maxBytes or lower maxKeys`,
    );
  }
  // Never less than the least: past the rows, each rule's overflow and spent cells (4,548 bytes a
  // rule) and a small maxKeys's fixed parts (the pool's reserve, the filters' least bits) cannot
  // shrink, so the default is the larger of the two (docs/threads.md, "Memory", gives the formula).
  const budget = options.maxBytes ?? Math.max(least, keyBudget);
  // Past maxKeys a flood pushes keys out of the table: returning keys stay exact only while the
  // table holds more entries than arrive between their returns, and never-seen keys skip the
  // summary only while the filter has bits to spare (summary-filter.ts). Both are far cheaper
  // than the summary's cells, so the budget past maxKeys buys them (bench/threads-flood.mjs).
  // Mostly buckets: a tenth of it still holds 3,000,000 one-request keys with no brand-new key
  // read back, while every bucket more keeps a returning record that 50 rules multiply
  // (BENCH_RULES=50: 1.7% of honest requests refused with a fifth to the filter).
  const extra = budget - least;
  if (extra > 0) {
    // 16 bits a key in each of two generations: 4 bytes a key, in each of the two filters (the
    // spent filter's are as many as the summary filter's: layout.ts); the loop that fits the
    // budget below gives back buckets for the spent filter's share.
    params.filterKeys = maxKeys + Math.floor(extra / 10 / 4);
    // A tenth to the summary pool, up to every rule's cells: at `maxKeys` it backs four rules'
    // cells, and a key pushed out of a rule the pool no longer backs joins one of its rule's 16
    // overflow cells, which every such key of the rule shares (summary.ts). Wide records buy few
    // buckets, so many keys are pushed out: 12 rules flooded by keys spending their whole limit
    // at `recordWords: 24`, maxKeys 2,000, refused 1.4-2.1% of honest requests through the
    // overflow cells, 0.3-0.4% with this tenth (test/threads/rules-flood.test.ts), 0-0.02% with
    // a fifth; but a fifth cost buckets that 200 sliding-log rules' returning records need
    // (bench/threads-flood.mjs --sweep: 3.0% of honest requests refused with a tenth, 10.4% with
    // a fifth). 8 rules at maxKeys a quarter of the honest records: 20% -> 0% with a tenth.
    const poolBlock = SUMMARY_WORDS * 8 + 4;
    params.summaryBlocks = Math.min(cells + 256, summaryBlocks + Math.floor(extra / 10 / poolBlock));
    // A bucket: its word, its block and its link, and a sixteenth of a spare block.
    const perBucket = ((8 + blockBytes(recordWords) + 4) * 17) / 16;
    params.buckets = buckets + Math.floor((extra * 8) / 10 / perBucket);
    params.blocks = params.buckets + Math.max(256, params.buckets >> 4);
    // The spent filter's share and the rounding of regions to whole words: the most buckets
    // (at least `buckets`) within the budget, found by bisection (bytes grow with buckets; one
    // bucket at a time took thousands of layouts, 1-2 s per store at maxKeys 10,000 under load).
    const fits = (n: number) => {
      params.buckets = n;
      params.blocks = n + Math.max(256, n >> 4);
      return layoutOf(params).bytes <= budget;
    };
    let lo = buckets;
    let hi = params.buckets;
    if (!fits(hi)) {
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (fits(mid)) lo = mid;
        else hi = mid;
      }
      fits(lo);
    }
  }
  const { bytes } = layoutOf(params);
  if (bytes > MAX_MEMORY_BYTES) {
    throw new ArgumentError(
      `SharedMemoryStore: { maxKeys: ${maxKeys}, recordWords: ${recordWords}, maxRules: ${maxRules} } needs ` +
        `${bytes} bytes and one store holds at most 4 GiB (one 32-bit WebAssembly memory, where its atomics run); ` +
        "lower maxKeys or recordWords, or split the keys over several stores",
    );
  }
  return params;
}

/**
 * The default cells per row: `maxKeys / 16` within 64..1024, and no wider than keeps the cell
 * words of every rule's rows (`maxRules × DEPTH × width`, 8 bytes each, reserved whether or not
 * a pool block ever backs them) within `CELL_WORDS_SHARE` of the budget. Rows are backed lazily
 * from the pool, which holds far fewer blocks than cells, so under many rules full-width rows
 * were mostly empty words: 200 rules at `maxKeys: 10_000` took 6.5 MB of the 24 MB for them,
 * bytes the table's buckets then lacked, and nearly every rule's keys went to its overflow
 * cells (bench/threads-flood.mjs --sweep, 200 sliding-log rules, 10,000 keys spending their
 * limit: 3.0% of honest requests refused at 1,024 cells a row, 0.1% at 256). Rules share the
 * budget alike: each gets the same rows whatever their number. With more than 64 rules allowed
 * the eighth goes below 64 cells (down to 16): rows of 64 took 2 KB a rule whatever the budget.
 */
function defaultWidth(maxKeys: number, maxRules: number, maxBytes: number | undefined): number {
  const byKeys = Math.min(1024, Math.max(64, pow2(maxKeys / 16)));
  // A store sized for maxKeys alone (tests) keeps the rows a default budget would give it.
  const budget =
    maxBytes === undefined || maxBytes === LEAST_BYTES
      ? Math.min(DEFAULT_MAX_BYTES, maxKeys * BYTES_PER_KEY)
      : maxBytes;
  const byBudget = pow2(budget / CELL_WORDS_SHARE / (8 * DEPTH * maxRules) + 1) / 2;
  // Stores allowed the default 64 rules or fewer keep rows of 64 at least (tiny maxKeys: the rows
  // every test measured); more rules go down to LEAST_WIDTH, or their rows alone pass the eighth.
  return Math.max(maxRules > DEFAULT_MAX_RULES ? LEAST_WIDTH : 64, Math.min(byKeys, byBudget));
}

/** The default width keeps every rule's cell words within 1/CELL_WORDS_SHARE of the budget. */
const CELL_WORDS_SHARE = 8;

/** The smallest power of two ≥ x (and ≥ 1). */
function pow2(x: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, x)));
}

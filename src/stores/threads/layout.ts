/**
 * Where everything lives in the one shared memory of a SharedMemoryStore (a shared
 * `WebAssembly.Memory`, so the bucket words' atomics run in WebAssembly: compact/shared-word.ts;
 * its buffer is the SharedArrayBuffer the views read). The memory is the whole store: a header
 * of sizes and counters, the compact table's bucket words and blocks
 * (src/stores/compact/shared-table.ts), the rule registry, the summary cells and blocks, the
 * summary filter (summary-filter.ts), and a byte arena for rule texts. Every thread derives the same offsets from the header, so the
 * handle passed between threads is the memory alone.
 *
 * Units: "words" are 8 bytes. `W` (BigInt64) holds the 64-bit words updated by
 * compare-and-swap (a 32-bit tag above a 32-bit block index + 1), `I` (Int32) the small
 * counters and links, `F` (Float64) and `U32` the blocks, `U` the arena.
 */

import { StoreError } from "../../core/errors.ts";
import { blockBytes, initRegion, type SharedRegion } from "../compact/shared-table.ts";
import { bufferOf, PAGE_BYTES, sharedMemory } from "../compact/shared-word.ts";
import { NO_INSTANT } from "./instant-word.ts";

/** Rows of every rule's summary: a key is over-counted only if all of its cells are shared. */
export const DEPTH = 4;
/** Words of one summary cell block (fresh-at, the members' summary slots, a ban's three). */
export const SUMMARY_WORDS = 16;
/** Overflow cells of each rule (summary.ts), chosen by a key's top 4 fingerprint bits. */
export const OVERFLOW_CELLS = 16;
/** Summary blocks kept apart for threads' private spares (summary.ts), beside the pool that backs cells. */
export const RESERVE_BLOCKS = 256;

/** Bits of each summary filter generation sized for `keys` keys: 16 per key in whole Int32 words, at least 2^13. */
export function filterBitsFor(keys: number): number {
  return 32 * Math.max(256, Math.ceil((16 * keys) / 32));
}

const MAGIC = 0x51c7ead5;
// 3: the memory became a shared WebAssembly.Memory (whole pages). 4: an entry's tag holds the
// returning bit (bucket.ts RETURNING) and a 14-bit table index; the summary filter. 5: the
// table and the filter are sized by a byte budget (params.ts), the filter's keys in the header.
// 6: the spent cells and the spent filter (summary.ts). 7: entries as wide as their rule, the
// width in tag bits 16-23 (compact/shared-bucket.ts).
const VERSION = 7;
/** Int32 slots of the header (a multiple of 2, so the 64-bit words after it stay aligned). */
const HEADER_INTS = 32;

/** Header slots (Int32 indices). */
export const H = {
  magic: 0,
  version: 1,
  buckets: 2,
  recordWords: 3,
  blocks: 4,
  summaryBlocks: 5,
  maxRules: 6,
  summaryWidth: 7,
  arenaBytes: 8,
  seed: 9,
  maxKeys: 10,
  evicted: 11,
  approximate: 12,
  refused: 13,
  arenaCursor: 14,
  unsummarised: 15,
  unpinned: 16,
  /** The summary filter's rotations so far (its low bit: the current generation). */
  filterEpoch: 17,
  /** 1 while a thread rotates the filter. */
  filterBusy: 18,
  /** Joins into the filter's generation 0 (and, next slot, 1) since it was last emptied. */
  filterJoins0: 19,
  /** Keys each generation of the summary filter is sized for (16 bits each; params.ts). */
  filterKeys: 21,
  /** Joins into a rule's overflow cell (the summary pool had no block for a row: summary.ts). */
  overflowed: 22,
  /** The spent filter's rotations (as `filterEpoch`, for the filter of keys given up spent: summary.ts). */
  spentEpoch: 23,
  /** 1 while a thread rotates the spent filter. */
  spentBusy: 24,
  /** Joins into the spent filter's generation 0 (and, next slot, 1) since it was last emptied. */
  spentJoins0: 25,
} as const;

/** The header slots of one summary filter (summary-filter.ts): the filter of all keys summarised, or of those given up spent. */
export interface FilterSlots {
  epoch: number;
  busy: number;
  joins0: number;
}
/** Header slots of the summary filter. */
export const SUMMARY_FILTER: FilterSlots = { epoch: H.filterEpoch, busy: H.filterBusy, joins0: H.filterJoins0 };
/** Header slots of the spent filter. */
export const SPENT_FILTER: FilterSlots = { epoch: H.spentEpoch, busy: H.spentBusy, joins0: H.spentJoins0 };

/** The sizes a store is built with (all in the header). */
export interface Params {
  buckets: number;
  recordWords: number;
  blocks: number;
  summaryBlocks: number;
  maxRules: number;
  summaryWidth: number;
  arenaBytes: number;
  seed: number;
  maxKeys: number;
  /** Keys each summary filter generation is sized for (at least `maxKeys`). */
  filterKeys: number;
}

/** Offsets derived from the params: W indices, I indices, F indices, U byte offset. */
export interface Layout extends Params {
  /** The compact table's region. */
  table: SharedRegion;
  /** W: the free-list head of the summary pool. */
  summaryFreeHead: number;
  /** W: the free-list head of the summary blocks reserved for threads' spares. */
  summaryReserveHead: number;
  /** W: per rule, its `OVERFLOW_CELLS` overflow cells (summary.ts), backed by blocks from the start. */
  overflowBase: number;
  /** W: per rule, its `OVERFLOW_CELLS` spent cells (summary.ts), backed by blocks from the start, after the overflow cells'. */
  spentBase: number;
  /** W: the registry's identity words and spec words. */
  ruleIdBase: number;
  ruleSpecBase: number;
  /** W: summary cell words, `maxRules × DEPTH × summaryWidth`. */
  cellBase: number;
  /** I: a version per rule, bumped when its spec changes. */
  ruleVersionBase: number;
  /** I: free-list links of the summary pool. */
  summaryNextBase: number;
  /** F: the first summary block. */
  summaryBase: number;
  /** Bits of each generation of the summary filter (summary-filter.ts). */
  filterBits: number;
  /** I: the summary filter's two generations of bits. */
  filterBase: number;
  /** W: per generation and rule, the latest fresh-at joined (summary-filter.ts). */
  filterFreshBase: number;
  /** I: the spent filter's two generations of bits (as many as the summary filter's). */
  spentFilterBase: number;
  /** W: per generation and rule, the latest fresh-at joined into the spent filter. */
  spentFreshBase: number;
  /** W: per rule, the latest end of a block placed on one of its keys (registry.ts). */
  ruleBlockBase: number;
  /** W: per rule, the latest instant any thread decided it at when it joined a key into the summary (summary.ts). */
  ruleSeenBase: number;
  /** U: the arena. */
  arenaBase: number;
  /** Total bytes. */
  bytes: number;
}

/** Computes every offset from the params (the same in every thread). */
export function layoutOf(p: Params): Layout {
  let word = HEADER_INTS / 2;
  const take = (n: number) => {
    const at = word;
    word += n;
    return at;
  };
  const freeHead = take(1);
  const summaryFreeHead = take(1);
  const summaryReserveHead = take(1);
  const bucketBase = take(p.buckets);
  const ruleIdBase = take(p.maxRules);
  const ruleSpecBase = take(p.maxRules);
  const cellBase = take(p.maxRules * DEPTH * p.summaryWidth);
  const filterFreshBase = take(2 * p.maxRules);
  const ruleBlockBase = take(p.maxRules);
  const ruleSeenBase = take(p.maxRules);
  const overflowBase = take(p.maxRules * OVERFLOW_CELLS);
  const spentBase = take(p.maxRules * OVERFLOW_CELLS);
  const spentFreshBase = take(2 * p.maxRules);
  // The pool's blocks, then the rules' overflow cells', their spent cells', then the spares' reserve.
  const summaryTotal = p.summaryBlocks + 2 * p.maxRules * OVERFLOW_CELLS + RESERVE_BLOCKS;
  const filterBits = filterBitsFor(p.filterKeys);
  // Int32 regions: two per word.
  const ruleVersionBase = word * 2;
  const nextBase = ruleVersionBase + p.maxRules;
  const summaryNextBase = nextBase + p.blocks;
  const filterBase = summaryNextBase + summaryTotal;
  const spentFilterBase = filterBase + 2 * (filterBits / 32);
  word = Math.ceil((spentFilterBase + 2 * (filterBits / 32)) / 2);
  const blockBase = take((p.blocks * blockBytes(p.recordWords)) / 8);
  const summaryBase = take(summaryTotal * SUMMARY_WORDS);
  const arenaBase = word * 8;
  const bytes = arenaBase + p.arenaBytes;
  const table: SharedRegion = {
    buckets: p.buckets,
    stateWords: p.recordWords,
    blocks: p.blocks,
    bucketBase,
    freeHead,
    nextBase,
    blockBase: blockBase * 2,
  };
  return {
    ...p,
    table,
    summaryFreeHead,
    summaryReserveHead,
    overflowBase,
    spentBase,
    ruleIdBase,
    ruleSpecBase,
    cellBase,
    ruleVersionBase,
    summaryNextBase,
    summaryBase,
    filterBits,
    filterBase,
    filterFreshBase,
    spentFilterBase,
    spentFreshBase,
    ruleBlockBase,
    ruleSeenBase,
    arenaBase,
    bytes,
  };
}

/** The typed views every thread reads the buffer through. */
export interface Views {
  W: BigInt64Array;
  I: Int32Array;
  F: Float64Array;
  U32: Uint32Array;
  U: Uint8Array;
}

/** Views over `buffer`. */
export function viewsOf(buffer: SharedArrayBuffer): Views {
  return {
    W: new BigInt64Array(buffer),
    I: new Int32Array(buffer),
    F: new Float64Array(buffer),
    U32: new Uint32Array(buffer),
    U: new Uint8Array(buffer),
  };
}

/** Allocates and initialises a memory for `p`: header written, both free lists full. */
export function createMemory(p: Params): { memory: WebAssembly.Memory; layout: Layout } {
  const layout = layoutOf(p);
  const memory = sharedMemory(layout.bytes);
  const buffer = bufferOf(memory);
  const views = viewsOf(buffer);
  const { W, I } = views;
  I[H.magic] = MAGIC;
  I[H.version] = VERSION;
  I[H.buckets] = p.buckets;
  I[H.recordWords] = p.recordWords;
  I[H.blocks] = p.blocks;
  I[H.summaryBlocks] = p.summaryBlocks;
  I[H.maxRules] = p.maxRules;
  I[H.summaryWidth] = p.summaryWidth;
  I[H.arenaBytes] = p.arenaBytes;
  I[H.seed] = p.seed;
  I[H.maxKeys] = p.maxKeys;
  I[H.filterKeys] = p.filterKeys;
  // Free lists: each block links to the next; the head (tag 0) points at block 0.
  initRegion(views, layout.table);
  for (let i = 0; i < p.summaryBlocks; i++) I[layout.summaryNextBase + i] = i + 1 < p.summaryBlocks ? i + 1 : -1;
  W[layout.summaryFreeHead] = p.summaryBlocks > 0 ? 1n : 0n;
  // Each rule's overflow and spent cells hold their blocks from the start (empty: NaN), so
  // joining into one needs only a thread's spare, never the pool (summary.ts). The spent cells'
  // words follow the overflow cells' (layoutOf), as their blocks do.
  for (let c = 0; c < 2 * p.maxRules * OVERFLOW_CELLS; c++) {
    const block = p.summaryBlocks + c;
    W[layout.overflowBase + c] = BigInt(block + 1);
    views.F.fill(
      Number.NaN,
      layout.summaryBase + block * SUMMARY_WORDS,
      layout.summaryBase + (block + 1) * SUMMARY_WORDS,
    );
  }
  const reserve = p.summaryBlocks + 2 * p.maxRules * OVERFLOW_CELLS;
  for (let i = reserve; i < reserve + RESERVE_BLOCKS; i++) {
    I[layout.summaryNextBase + i] = i + 1 < reserve + RESERVE_BLOCKS ? i + 1 : -1;
  }
  W[layout.summaryReserveHead] = BigInt(reserve + 1);
  // The filter's generations hold no rule's keys yet (summary-filter.ts), no rule had a block,
  // and none was decided.
  W.fill(NO_INSTANT, layout.filterFreshBase, layout.filterFreshBase + 2 * p.maxRules);
  W.fill(NO_INSTANT, layout.spentFreshBase, layout.spentFreshBase + 2 * p.maxRules);
  W.fill(NO_INSTANT, layout.ruleBlockBase, layout.ruleBlockBase + p.maxRules);
  W.fill(NO_INSTANT, layout.ruleSeenBase, layout.ruleSeenBase + p.maxRules);
  return { memory, layout };
}

/** Reads the layout of a memory made by `createMemory` (in another thread); StoreError if it is not one. */
export function readLayout(memory: unknown): Layout {
  const buffer: unknown = memory instanceof WebAssembly.Memory ? bufferOf(memory) : undefined;
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < HEADER_INTS * 4) {
    throw new StoreError("SharedMemoryStore.attach: the handle holds no SharedMemoryStore memory");
  }
  const I = new Int32Array(buffer, 0, HEADER_INTS);
  if (I[H.magic] !== MAGIC || I[H.version] !== VERSION) {
    throw new StoreError("SharedMemoryStore.attach: the buffer is not a SharedMemoryStore of this version");
  }
  const layout = layoutOf({
    buckets: I[H.buckets] as number,
    recordWords: I[H.recordWords] as number,
    blocks: I[H.blocks] as number,
    summaryBlocks: I[H.summaryBlocks] as number,
    maxRules: I[H.maxRules] as number,
    summaryWidth: I[H.summaryWidth] as number,
    arenaBytes: I[H.arenaBytes] as number,
    seed: I[H.seed] as number,
    maxKeys: I[H.maxKeys] as number,
    filterKeys: I[H.filterKeys] as number,
  });
  if (Math.ceil(layout.bytes / PAGE_BYTES) * PAGE_BYTES !== buffer.byteLength) {
    throw new StoreError("SharedMemoryStore.attach: the memory's size does not match its header");
  }
  return layout;
}

/**
 * Where everything lives in the one SharedArrayBuffer of a SharedMemoryStore. The buffer is
 * the whole store: a header of sizes and counters, the bucket words, the rule registry, the
 * summary cells, two pools of fixed-size blocks and a byte arena for rule texts. Every thread
 * derives the same offsets from the header, so the handle passed between threads is the
 * buffer alone.
 *
 * Units: "words" are 8 bytes. `W` (BigInt64) holds the 64-bit words updated by
 * compare-and-swap (a 32-bit tag above a 32-bit block index + 1), `I` (Int32) the small
 * counters and links, `F` (Float64) the state blocks, `U` the arena.
 */
import { StoreError } from "../../core/errors.ts";

/** Entries per bucket: a bucket is rewritten whole, so this bounds the bytes copied per decision. */
export const BUCKET_ENTRIES = 8;
/** Words before an entry's record: the key's fingerprint, its rule index, the instant it is fresh again. */
export const ENTRY_HEADER = 3;
/** Rows of every rule's summary: a key is over-counted only if all of its cells are shared. */
export const DEPTH = 4;
/** Words of one summary cell block (fresh-at, the members' summary slots, a ban's three). */
export const SUMMARY_WORDS = 16;

const MAGIC = 0x51c7ead5;
const VERSION = 1;
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
} as const;

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
}

/** Offsets derived from the params: W indices, I indices, F indices, U byte offset. */
export interface Layout extends Params {
  /** Words of one bucket block. */
  blockWords: number;
  /** Words of one entry (header + record). */
  entryWords: number;
  /** W: the free-list heads of the bucket pool and the summary pool. */
  freeHead: number;
  summaryFreeHead: number;
  /** W: one word per bucket. */
  bucketBase: number;
  /** W: the registry's identity words and spec words. */
  ruleIdBase: number;
  ruleSpecBase: number;
  /** W: summary cell words, `maxRules × DEPTH × summaryWidth`. */
  cellBase: number;
  /** I: a version per rule, bumped when its spec changes. */
  ruleVersionBase: number;
  /** I: free-list links of the two pools. */
  nextBase: number;
  summaryNextBase: number;
  /** F: the first block of each pool. */
  blockBase: number;
  summaryBase: number;
  /** U: the arena. */
  arenaBase: number;
  /** Total bytes. */
  bytes: number;
}

/** Computes every offset from the params (the same in every thread). */
export function layoutOf(p: Params): Layout {
  const entryWords = ENTRY_HEADER + p.recordWords;
  const blockWords = 1 + BUCKET_ENTRIES * entryWords;
  let word = HEADER_INTS / 2;
  const take = (n: number) => {
    const at = word;
    word += n;
    return at;
  };
  const freeHead = take(1);
  const summaryFreeHead = take(1);
  const bucketBase = take(p.buckets);
  const ruleIdBase = take(p.maxRules);
  const ruleSpecBase = take(p.maxRules);
  const cellBase = take(p.maxRules * DEPTH * p.summaryWidth);
  // Int32 regions: two per word.
  const ruleVersionBase = word * 2;
  const nextBase = ruleVersionBase + p.maxRules;
  const summaryNextBase = nextBase + p.blocks;
  word = Math.ceil((summaryNextBase + p.summaryBlocks) / 2);
  const blockBase = take(p.blocks * blockWords);
  const summaryBase = take(p.summaryBlocks * SUMMARY_WORDS);
  const arenaBase = word * 8;
  const bytes = arenaBase + p.arenaBytes;
  return {
    ...p,
    entryWords,
    blockWords,
    freeHead,
    summaryFreeHead,
    bucketBase,
    ruleIdBase,
    ruleSpecBase,
    cellBase,
    ruleVersionBase,
    nextBase,
    summaryNextBase,
    blockBase,
    summaryBase,
    arenaBase,
    bytes,
  };
}

/** The typed views every thread reads the buffer through. */
export interface Views {
  W: BigInt64Array;
  I: Int32Array;
  F: Float64Array;
  U: Uint8Array;
}

/** Views over `buffer`. */
export function viewsOf(buffer: SharedArrayBuffer): Views {
  return {
    W: new BigInt64Array(buffer),
    I: new Int32Array(buffer),
    F: new Float64Array(buffer),
    U: new Uint8Array(buffer),
  };
}

/** Allocates and initialises a buffer for `p`: header written, both free lists full. */
export function createBuffer(p: Params): { buffer: SharedArrayBuffer; layout: Layout } {
  const layout = layoutOf(p);
  const buffer = new SharedArrayBuffer(layout.bytes);
  const { W, I } = viewsOf(buffer);
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
  // Free lists: each block links to the next; the head (tag 0) points at block 0.
  for (let i = 0; i < p.blocks; i++) I[layout.nextBase + i] = i + 1 < p.blocks ? i + 1 : -1;
  for (let i = 0; i < p.summaryBlocks; i++) I[layout.summaryNextBase + i] = i + 1 < p.summaryBlocks ? i + 1 : -1;
  W[layout.freeHead] = p.blocks > 0 ? 1n : 0n;
  W[layout.summaryFreeHead] = p.summaryBlocks > 0 ? 1n : 0n;
  return { buffer, layout };
}

/** Reads the layout of a buffer made by `createBuffer` (in another thread); StoreError if it is not one. */
export function readLayout(buffer: unknown): Layout {
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < HEADER_INTS * 4) {
    throw new StoreError("SharedMemoryStore.attach: the handle holds no SharedMemoryStore buffer");
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
  });
  if (layout.bytes !== buffer.byteLength) {
    throw new StoreError("SharedMemoryStore.attach: the buffer's size does not match its header");
  }
  return layout;
}

/** The low 32 bits of a tagged word: block index + 1 (0: none). */
const LOW = 0xffffffffn;

/** The block index in a tagged word (-1: none). */
export function indexOf(word: bigint): number {
  return Number(word & LOW) - 1;
}

/** The word that replaces `word`: the next tag (so an old copy of the word never matches again) and `index`. */
export function nextWord(word: bigint, index: number): bigint {
  return BigInt.asIntN(64, ((word >> 32n) + 1n) << 32n) | BigInt(index + 1);
}

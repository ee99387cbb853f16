/**
 * The compact table (bucket.ts) on a SharedArrayBuffer, safe under every interleaving of
 * threads and every death (`worker.terminate()` can stop a thread between any two steps, so
 * nothing here is ever "held"):
 *
 * - A bucket is ONE 64-bit word: a 32-bit tag and the index + 1 of an immutable block holding
 *   the bucket's entries (the same entries as the in-process table's). No thread writes a
 *   published block.
 * - An update reads the published block, drafts the new bucket in a block the thread owns
 *   privately, and publishes it with one compare-and-swap of the bucket word. If another thread
 *   published first, the CAS fails and the caller decides again from the new state: no update is
 *   lost and no thread waits for another (lock-free). One bucket per key (no second choice)
 *   is what makes this enough: a key can never be inserted twice.
 * - The block the CAS replaced is unreachable from then on: it becomes the winner's private
 *   block. The tag grows with every publish, so a stale copy of the word never matches again,
 *   even when the same block index comes back (ABA).
 * - A read that writes nothing is validated by loading the word again: it is linearised there.
 * - The word's atomics run in WebAssembly (shared-word.wat), where they are machine
 *   instructions, not calls into the runtime with BigInt operands. A word is read as its two
 *   32-bit halves (the tag, atomically, first; then the block). A torn pair (tag and block from
 *   two different publishes) is harmless: the tag changes on every publish, so such a pair never
 *   equals the word, and both `unchanged` and `publish` fail on it.
 * - A thread that dies leaves every bucket pointing at a complete block and leaks the one block
 *   it held privately (the pool keeps spares for that).
 */
import { StoreError } from "../../core/errors.ts";
import { BUCKET_SLOTS, entryU32 } from "./bucket.ts";
import { FreeList } from "./free-list.ts";
import { usedWords } from "./shared-bucket.ts";
import type { SharedWord } from "./shared-word.ts";

/** What a draft without a block left in the pool throws. */
export const NO_FREE_BLOCK = "SharedMemoryStore: no free block left (threads that ended without close() keep one each)";

/** Where a shared table lives in its buffer (indices into the views named). */
export interface SharedRegion {
  /** Buckets of the table. */
  buckets: number;
  /** Float64 words of state of the widest entry (`recordWords`; entries are as wide as their rule: shared-bucket.ts). */
  stateWords: number;
  /** Blocks of the pool (one per bucket and spares). */
  blocks: number;
  /** BigInt64 index of the first bucket word. */
  bucketBase: number;
  /** BigInt64 index of the pool's free-list head. */
  freeHead: number;
  /** Int32 index of the pool's free-list links. */
  nextBase: number;
  /** Uint32 index (even) of the first block. */
  blockBase: number;
}

/** The views a shared table works through (all over one SharedArrayBuffer). */
export interface SharedViews {
  W: BigInt64Array;
  I: Int32Array;
  F: Float64Array;
  U32: Uint32Array;
}

/** Bytes of one block: room for eight entries of `stateWords` words (more of narrower ones). */
export function blockBytes(stateWords: number): number {
  return BUCKET_SLOTS * entryU32(stateWords) * 4;
}

/** Initialises a fresh region: every block on the free list, every bucket empty (all zero). */
export function initRegion(views: SharedViews, r: SharedRegion): void {
  for (let i = 0; i < r.blocks; i++) views.I[r.nextBase + i] = i + 1 < r.blocks ? i + 1 : -1;
  views.W[r.freeHead] = r.blocks > 0 ? 1n : 0n;
}

/** A thread's handle on a shared compact table: one read-draft-publish transaction at a time. */
export class SharedTable {
  /** 32-bit view of the buffer (entries' fingerprints). */
  readonly u32: Uint32Array;
  /** Int32 view of the buffer (entries' words as int32 bit patterns). */
  readonly i32: Int32Array;
  /** Float64 view of the buffer (entries' states). */
  readonly f64: Float64Array;
  /** Float64 words of the widest entry (`recordWords`). */
  readonly R: number;
  /** Int32 words of a block. */
  readonly cap: number;
  readonly #r: SharedRegion;
  /** This thread's transaction (shared-word.wat): the word read, the bucket scanned, the private block. */
  readonly #word: SharedWord;
  readonly #free: FreeList;
  /** The published bucket's first u32 (-1: empty), set by `read` and `lookup`. */
  base = -1;
  /** Int32 words in use in the draft, set by `draft`. */
  used = 0;
  /** The Int32 offset of the key's entry in the bucket `lookup` read (-1: none). */
  entry = -1;
  /** Entries in use in the bucket `lookup` read. */
  entries = 0;
  /** Int32 words in use in the bucket `lookup` read. */
  words = 0;

  /** This thread's view of the table in `r`. */
  constructor(views: SharedViews, r: SharedRegion, word: SharedWord) {
    this.u32 = views.U32;
    this.f64 = views.F;
    this.i32 = views.I;
    this.#word = word;
    this.#r = r;
    this.R = r.stateWords;
    this.cap = BUCKET_SLOTS * entryU32(r.stateWords);
    word.init(r.blockBase, this.cap, this.R);
    this.#free = new FreeList(views.W, views.I, r.freeHead, r.nextBase);
  }

  /** Reads bucket `bucket`'s word: `base` is then its published entries (or -1). */
  read(bucket: number): void {
    // The tag first and atomically (shared-word.wat): the block read after it is that publish's
    // or a later one's, and a later one moved the tag, which `unchanged` and `publish` then see.
    this.base = this.#word.read(this.#wordAt(bucket));
  }

  /**
   * `read`, then the key (`h1`, `tag`) looked up in the bucket and its entries in use counted, in
   * one call: the Float64 index of the key's state, or -1 when it is not there; `base`, `entry`
   * (the key's entry's Int32 offset, -1: none), `entries` (in use) and `words` (theirs) are set.
   */
  lookup(bucket: number, h1: number, tag: number): number {
    const at = this.#word.take(this.#wordAt(bucket), h1, tag, 0);
    this.base = this.#word.base();
    this.entry = this.#word.found();
    this.entries = this.#word.count();
    this.words = this.#word.used();
    return at;
  }

  /** Whether the bucket word is still the one `read` saw (what was read from `base` is then consistent). */
  unchanged(): boolean {
    // The tag moves on every publish; the block half is compared too, as the whole word was.
    return this.#word.unchanged() === 1;
  }

  /**
   * Copies the bucket `read` saw, whose entries in use take `words` Int32 words (counted here
   * when not given), into this thread's private block; returns the copy's first u32, or -1 when
   * the pool has no block left. A torn source is bounded and never published (the word check in `publish`).
   */
  draft(words?: number): number {
    const dst = this.target();
    if (dst < 0) return -1;
    const n = this.base < 0 ? 0 : (words ?? usedWords(this.u32, this.base, this.cap, this.R).words);
    // One call: a JavaScript loop over a SharedArrayBuffer pays some 23 instructions a word (V8
    // checks the typed array on every access), copyWithin some 280 a call.
    this.#word.draft(n);
    this.used = n;
    return dst;
  }

  /**
   * The first u32 of this thread's private block, where the next draft goes (taken from the pool
   * on first use), or -1 when the pool has no block left.
   */
  target(): number {
    if (this.#word.spare() < 0) {
      const block = this.#free.pop();
      if (block < 0) return -1;
      this.#word.setSpare(block);
    }
    return this.#word.target();
  }

  /**
   * `lookup`'s search (the entry's width bits compared too: `tag` names the width), then, when the key is there, its bucket drafted into the private block, in one call:
   * the Float64 index of the key's state in the draft, where the caller reads it, decides, writes
   * the new state and `publish`es (or, writing nothing, checks `unchanged`); -1 when the key is
   * not there (nothing drafted). A torn read drafts garbage that neither of those lets through.
   */
  take(bucket: number, h1: number, tag: number): number {
    const at = this.#word.take(this.#wordAt(bucket), h1, tag, 1);
    if (at !== -2) return at;
    // No private block yet (the first write of this thread): one from the pool, then again.
    if (this.target() < 0) throw new StoreError(NO_FREE_BLOCK);
    return this.#word.take(this.#wordAt(bucket), h1, tag, 1);
  }

  /** The Int32 index of bucket `bucket`'s word (its low half). */
  #wordAt(bucket: number): number {
    return 2 * (this.#r.bucketBase + bucket);
  }

  /** Publishes the draft in place of what `read` saw; false when another thread published first. */
  publish(): boolean {
    // The next tag (wrapping at 2^32) above this thread's block, which the replaced block,
    // unreachable now, then replaces (shared-word.wat).
    return this.#word.publish() === 1;
  }

  /** Entries in the table now (a walk of every bucket: for stats). */
  keys(): number {
    let n = 0;
    for (let b = 0; b < this.#r.buckets; b++) {
      this.read(b);
      if (this.base >= 0) n += usedWords(this.u32, this.base, this.cap, this.R).entries;
    }
    return n;
  }

  /** Returns this thread's private block to the pool (when the thread is done with the table). */
  close(): void {
    const spare = this.#word.spare();
    if (spare >= 0) this.#free.push(spare);
    this.#word.setSpare(-1);
  }
}

/**
 * The capped store's middle tier: the compact table (bucket.ts) on an ArrayBuffer, updated in
 * place. A slot is 24 bytes: 32 + 16 bits of fingerprint, a 14-bit table (rule) index and two
 * float64 words of state (see state-codec.ts); or 16 bytes with one word of state (MemoryStore's
 * dense layout, dense-codec.ts). A key lives in one of two buckets of 8 slots
 * (the emptier when it is placed: two choices keep the buckets evenly filled, so a bucket
 * overflows only once the whole tier is nearly full, and the keys placed first are not the
 * first given up); when both are full, the emptier one's oldest slot that is not returning is
 * given up (a segmented FIFO: a key placed as returning, one that came back after it was
 * pushed out before, survives a flood of keys that come once; past `MAX_RETURNING` returning
 * entries, or with none other, the oldest returning one goes) and its state handed back to the
 * caller, who summarises it. The shared store (threads) runs the same
 * buckets on a SharedArrayBuffer, one bucket a key (its compare-and-swap updates one word).
 *
 * A slot number is `bucket · BUCKET_SLOTS + entry`; entries move down when one before them is
 * removed, so a slot number is only good until the next `remove` or `claim`.
 */
import {
  appendKey,
  BUCKET_SLOTS,
  bucketOf,
  countEntries,
  entryU32,
  findEntry,
  PINNED,
  RETURNING,
  removeEntry,
  stateAt,
  tableOfTag,
  tagOf,
} from "./bucket.ts";
import { fmix32 } from "./fingerprint.ts";
import { STATE_WORDS } from "./state-codec.ts";

export { BUCKET_SLOTS, MAX_TABLE_INDEX } from "./bucket.ts";

/**
 * Returning entries a full bucket protects (as the shared store's threads/room.ts does): the
 * rest of the bucket is where new keys wait to come back (two entries, so a new key survives one
 * other new key's arrival).
 */
export const MAX_RETURNING = BUCKET_SLOTS - 2;

/**
 * Tag bit of a slot holding a bound of its key's state, not the state itself (`markBound`).
 * The shared store's pin bit: that store never uses this class's slots, so it is free here.
 */
const BOUND = PINNED;

/** Bytes per slot holding `stateWords` float64 words of state (and the 8-byte fingerprint). */
export function slotBytes(stateWords: number): number {
  return entryU32(stateWords) * 4;
}

/** What `claim` pushed out to make room (table 0: nothing). */
export interface Victim {
  table: number;
  h1: number;
  h2: number;
}

/** A compact table of fingerprints and exact states. */
export class CompactTable {
  /** The buffer's float64 view: a slot's state is at `words[stateIndex(slot)]`. */
  readonly words: Float64Array;
  /** Float64 words of state per slot: 2 (any compactable record), or 1 (the dense layout, see dense-codec.ts). */
  readonly stateWords: number;
  /** State of the last victim of `claim` (`stateWords` words, from index 0). */
  readonly victimWords: Float64Array;
  /** 32-bit words per slot. */
  readonly #e: number;
  readonly #u32: Uint32Array;
  readonly #buckets: number;
  /** Occupied slots. */
  size = 0;
  /** Slots given up to make room (their states were handed to the caller). */
  evicted = 0;
  /** Filled by `claim` when it had to push something out. */
  readonly victim: Victim = { table: 0, h1: 0, h2: 0 };

  /** Bytes a table of `buckets` buckets takes (`stateWords` per slot). */
  static bytesFor(buckets: number, stateWords = STATE_WORDS): number {
    return buckets * BUCKET_SLOTS * slotBytes(stateWords);
  }

  /** The most buckets (at least 1) that fit in `bytes` (`stateWords` per slot). */
  static bucketsFor(bytes: number, stateWords = STATE_WORDS): number {
    return Math.max(1, Math.floor(bytes / CompactTable.bytesFor(1, stateWords)));
  }

  /** A table of `buckets` buckets of slots holding `stateWords` (1 or 2) words of state (fresh: all zero). */
  constructor(buckets: number, stateWords = STATE_WORDS) {
    const buffer = new ArrayBuffer(CompactTable.bytesFor(buckets, stateWords));
    this.stateWords = stateWords;
    this.victimWords = new Float64Array(stateWords);
    this.#e = entryU32(stateWords);
    this.#buckets = buckets;
    this.words = new Float64Array(buffer);
    this.#u32 = new Uint32Array(buffer);
  }

  /** Total slots. */
  get capacity(): number {
    return this.#buckets * BUCKET_SLOTS;
  }

  /** Bytes held (fixed). */
  get bytes(): number {
    return CompactTable.bytesFor(this.#buckets, this.stateWords);
  }

  /** The index in `words` of `slot`'s state. */
  stateIndex(slot: number): number {
    return stateAt(0, this.#e, slot);
  }

  /** The key's second bucket (its first is `bucketOf(table, h3)`; the two may be one). */
  #second(table: number, h3: number): number {
    return bucketOf(table, fmix32(h3 ^ 0x5bd1e995), this.#buckets);
  }

  /**
   * The slot holding (`table`, fingerprint `h`) in either of its buckets, or -1; with
   * `restored`, also in the two buckets a restore places it in (see `claimRestored`).
   */
  find(table: number, h: Uint32Array, restored = false): number {
    const found = this.#findBy(table, h[0] as number, h[1] as number, h[2] as number);
    return found >= 0 || !restored
      ? found
      : this.#findBy(table, h[0] as number, h[1] as number, restoredH3(h[0] as number, h[1] as number));
  }

  /** The slot holding (`table`, `h1`, `h2`) in the two buckets of bucket hash `h3`, or -1. */
  #findBy(table: number, h1: number, h2: number, h3: number): number {
    const E = this.#e;
    const tag = tagOf(h2, table);
    const first = bucketOf(table, h3, this.#buckets) * BUCKET_SLOTS * E;
    let e = findEntry(this.#u32, first, E, h1, tag);
    if (e >= 0) return first / E + e;
    const second = this.#second(table, h3) * BUCKET_SLOTS * E;
    if (second === first) return -1;
    e = findEntry(this.#u32, second, E, h1, tag);
    return e < 0 ? -1 : second / E + e;
  }

  /**
   * Marks `slot` as holding a bound of its key's state rather than the state itself (MemoryStore:
   * decisions from it say `approximate`). The pin bit, which only the shared store uses.
   */
  markBound(slot: number): void {
    const o = slot * this.#e + 1;
    this.#u32[o] = ((this.#u32[o] as number) | BOUND) >>> 0;
  }

  /** Whether `slot` holds a bound of its key's state (`markBound`). */
  boundAt(slot: number): boolean {
    return ((this.#u32[slot * this.#e + 1] as number) & BOUND) !== 0;
  }

  /** Whether `slot` holds a returning key (protected from keys that come once). */
  returningAt(slot: number): boolean {
    return ((this.#u32[slot * this.#e + 1] as number) & RETURNING) !== 0;
  }

  /** The table index stored in `slot` (0: empty). */
  tableOf(slot: number): number {
    return tableOfTag(this.#u32[slot * this.#e + 1] as number);
  }

  /** Frees `slot` (later slots of its bucket move down). */
  remove(slot: number): void {
    const E = this.#e;
    const bucket = Math.floor(slot / BUCKET_SLOTS);
    const base = bucket * BUCKET_SLOTS * E;
    removeEntry(this.#u32, base, E, slot - bucket * BUCKET_SLOTS, countEntries(this.#u32, base, E));
    this.size--;
  }

  /**
   * A slot for (`table`, `h`) at the end of its bucket (`returning`: marked as a key that came
   * back). When the bucket is full one slot is given up (see the class): `victim` then names
   * what was there and `victimWords` holds its state.
   */
  claim(table: number, h: Uint32Array, returning = false): number {
    const first = bucketOf(table, h[2] as number, this.#buckets);
    const second = this.#second(table, h[2] as number);
    const u32 = this.#u32;
    const E = this.#e;
    const bucket =
      countEntries(u32, second * BUCKET_SLOTS * E, E) < countEntries(u32, first * BUCKET_SLOTS * E, E) ? second : first;
    return this.claimIn(bucket, table, h[0] as number, h[1] as number, returning);
  }

  /**
   * `claim` for a record restored from a snapshot into a tier of another size (or for another
   * table index): its key's text, and so its bucket hash, is not known there, so it goes into
   * the emptier of two buckets its stored fingerprint picks (`restoredH3`), where `find` with
   * `restored` looks too. A full bucket gives up a slot as `claim` does (`victim`).
   */
  claimRestored(table: number, h1: number, h2: number, returning = false): number {
    const h3 = restoredH3(h1, h2);
    const first = bucketOf(table, h3, this.#buckets);
    const second = this.#second(table, h3);
    const E = this.#e;
    const bucket =
      countEntries(this.#u32, second * BUCKET_SLOTS * E, E) < countEntries(this.#u32, first * BUCKET_SLOTS * E, E)
        ? second
        : first;
    return this.claimIn(bucket, table, h1, h2, returning);
  }

  /** Buckets of the table (a snapshot's slots are placed back only into a table of as many). */
  get buckets(): number {
    return this.#buckets;
  }

  /** The bucket `slot` is in (what a snapshot saves: the bucket hash itself is not stored). */
  bucketOf(slot: number): number {
    return Math.floor(slot / BUCKET_SLOTS);
  }

  /**
   * `claim` in a known bucket: how a restore puts a saved slot back where `claim` had put it
   * (the key's text, and so its bucket hash, is not known there; its bucket is).
   */
  claimIn(bucket: number, table: number, h1: number, h2: number, returning = false): number {
    const u32 = this.#u32;
    const E = this.#e;
    const base = bucket * BUCKET_SLOTS * E;
    this.victim.table = 0;
    let count = countEntries(u32, base, E);
    if (count === BUCKET_SLOTS) {
      const e = victimEntry(u32, base, E);
      const o = base + e * E;
      const tag = u32[o + 1] as number;
      this.victim.table = tableOfTag(tag);
      this.victim.h1 = u32[o] as number;
      this.victim.h2 = (tag & 0xffff0000) >>> 0;
      const at = stateAt(base, E, e);
      for (let k = 0; k < this.stateWords; k++) this.victimWords[k] = this.words[at + k] as number;
      removeEntry(u32, base, E, e, count);
      count--;
      this.evicted++;
      this.size--;
    }
    appendKey(u32, base, E, count, h1, returning ? (tagOf(h2, table) | RETURNING) >>> 0 : tagOf(h2, table));
    this.size++;
    return base / E + count;
  }

  /** Calls `visit(slot)` for every occupied slot of `table` (snapshots, purges); `visit` may remove that slot. */
  forEach(table: number, visit: (slot: number, h1: number, h2: number) => void): void {
    const u32 = this.#u32;
    const E = this.#e;
    for (let b = 0; b < this.#buckets; b++) {
      const base = b * BUCKET_SLOTS * E;
      // Last to first: removing the visited slot moves none of those still to visit.
      for (let e = countEntries(u32, base, E) - 1; e >= 0; e--) {
        const tag = u32[base + e * E + 1] as number;
        if (tableOfTag(tag) === table) visit(base / E + e, u32[base + e * E] as number, (tag & 0xffff0000) >>> 0);
      }
    }
  }
}

/**
 * The bucket hash a restored record is placed by: from the 48 bits a slot stores (`h1`, the
 * high half of `h2`), since a snapshot cannot carry the key's own `h3` (no slot keeps it).
 */
export function restoredH3(h1: number, h2: number): number {
  return fmix32((h1 ^ Math.imul(h2 >>> 16, 0x9e3779b1)) >>> 0);
}

/**
 * The entry of the full bucket at `u32[base]` to give up: the oldest that is not returning,
 * unless more than `MAX_RETURNING` are returning or none is not: then the oldest returning.
 */
function victimEntry(u32: Uint32Array, base: number, E: number): number {
  let returned = 0;
  let probation = -1;
  for (let e = 0, o = base + 1; e < BUCKET_SLOTS; e++, o += E) {
    if (((u32[o] as number) & RETURNING) === 0) {
      if (probation < 0) probation = e;
    } else returned++;
  }
  return probation < 0 || returned > MAX_RETURNING ? firstReturning(u32, base, E) : probation;
}

/** The oldest returning entry of the full bucket at `u32[base]`. */
function firstReturning(u32: Uint32Array, base: number, E: number): number {
  for (let e = 0, o = base + 1; e < BUCKET_SLOTS; e++, o += E) if (((u32[o] as number) & RETURNING) !== 0) return e;
  return 0;
}

/**
 * The capped store's middle tier: a bucketed open-addressing table of key fingerprints and
 * exact states in typed arrays over one buffer (an ArrayBuffer here; the layout works as well on
 * a SharedArrayBuffer). A slot is 24 bytes: 32 + 16 bits of fingerprint, a 16-bit table (rule)
 * index, and two float64 words of state (see state-codec.ts). Each key may live in one of two
 * buckets of 8 slots (two-choice hashing keeps buckets even up to high load); when both are
 * full, a slot of the first is given up in FIFO order (a per-bucket hand) and its content is
 * handed back to the caller, who summarises it.
 *
 * Layout of the buffer: `words` (2 float64 per slot), then `meta` (2 uint32 per slot: h1, and
 * h2's high 16 bits | table index; table index 0 means empty), then `hands` (1 byte per bucket).
 */
import { fmix32 } from "./fingerprint.ts";
import { STATE_WORDS } from "./state-codec.ts";

/** Slots per bucket. */
export const BUCKET_SLOTS = 8;
/** Bytes per slot (state words and fingerprint). */
export const SLOT_BYTES = STATE_WORDS * 8 + 8;
/** The largest table index a slot can name. */
export const MAX_TABLE_INDEX = 0xffff;

/** What `claim` pushed out to make room (table 0: nothing). */
export interface Victim {
  table: number;
  h1: number;
  h2: number;
  /** Slot whose words still hold the victim's state until the caller overwrites them. */
  slot: number;
}

/** A compact table of fingerprints and exact states. */
export class CompactTable {
  /** State words, `STATE_WORDS` per slot. */
  readonly words: Float64Array;
  readonly #meta: Uint32Array;
  readonly #hands: Uint8Array;
  readonly #buckets: number;
  /** Occupied slots. */
  size = 0;
  /** Slots given up to make room (their states were handed to the caller). */
  evicted = 0;
  /** Filled by `claim` when it had to push something out. */
  readonly victim: Victim = { table: 0, h1: 0, h2: 0, slot: -1 };

  /** Bytes a table of `buckets` buckets takes. */
  static bytesFor(buckets: number): number {
    return buckets * (BUCKET_SLOTS * SLOT_BYTES + 1);
  }

  /** The most buckets (at least 1) that fit in `bytes`. */
  static bucketsFor(bytes: number): number {
    return Math.max(1, Math.floor(bytes / CompactTable.bytesFor(1)));
  }

  /** A table of `buckets` buckets over `buffer` (fresh: all zero). */
  constructor(
    buckets: number,
    buffer: ArrayBuffer | SharedArrayBuffer = new ArrayBuffer(CompactTable.bytesFor(buckets)),
  ) {
    const slots = buckets * BUCKET_SLOTS;
    this.#buckets = buckets;
    this.words = new Float64Array(buffer, 0, slots * STATE_WORDS);
    this.#meta = new Uint32Array(buffer, slots * STATE_WORDS * 8, slots * 2);
    this.#hands = new Uint8Array(buffer, slots * SLOT_BYTES, buckets);
  }

  /** Total slots. */
  get capacity(): number {
    return this.#buckets * BUCKET_SLOTS;
  }

  /** Bytes held (fixed). */
  get bytes(): number {
    return CompactTable.bytesFor(this.#buckets);
  }

  #a = 0;
  #b = 0;

  /** Sets `#a` and `#b` to the key's two buckets' first slots (no allocation: this is the flood's path). */
  #pair(table: number, h: Uint32Array): void {
    const n = this.#buckets;
    // The table is mixed in, so one key under many rules spreads over the table too.
    const h3 = fmix32((h[2] as number) ^ Math.imul(table, 0x9e3779b1));
    // Multiply-high maps 32 hash bits onto any bucket count without a power-of-two rounding.
    const b1 = Math.floor((h3 * n) / 0x100000000);
    let b2 = Math.floor((fmix32(h3 ^ 0x5bd1e995) * n) / 0x100000000);
    if (b2 === b1 && n > 1) b2 = (b1 + 1) % n;
    this.#a = b1 * BUCKET_SLOTS;
    this.#b = b2 * BUCKET_SLOTS;
  }

  /** The slot holding (`table`, fingerprint `h`), or -1. */
  find(table: number, h: Uint32Array): number {
    const meta = this.#meta;
    const h1 = h[0] as number;
    const tag = ((h[1] as number) | table) >>> 0;
    this.#pair(table, h);
    const a = this.#a;
    const b = this.#b;
    for (let s = a; s < a + BUCKET_SLOTS; s++) if (meta[2 * s] === h1 && meta[2 * s + 1] === tag) return s;
    if (b !== a) for (let s = b; s < b + BUCKET_SLOTS; s++) if (meta[2 * s] === h1 && meta[2 * s + 1] === tag) return s;
    return -1;
  }

  /** The table index stored in `slot` (0: empty). */
  tableOf(slot: number): number {
    return (this.#meta[2 * slot + 1] as number) & 0xffff;
  }

  /** Frees `slot`. */
  remove(slot: number): void {
    this.#meta[2 * slot] = 0;
    this.#meta[2 * slot + 1] = 0;
    this.size--;
  }

  /**
   * A slot for (`table`, `h`) in the emptier of its two buckets. When both are full, the first
   * bucket's oldest slot is taken: `victim` then describes what was there (its words are still
   * in place), and the caller must read them before writing the new state.
   */
  claim(table: number, h: Uint32Array): number {
    const meta = this.#meta;
    this.#pair(table, h);
    const a = this.#a;
    const b = this.#b;
    this.victim.table = 0;
    let free = -1;
    let freeB = -1;
    let usedA = 0;
    let usedB = 0;
    for (let s = a; s < a + BUCKET_SLOTS; s++) {
      if (((meta[2 * s + 1] as number) & 0xffff) === 0) {
        if (free < 0) free = s;
      } else usedA++;
    }
    if (b !== a) {
      for (let s = b; s < b + BUCKET_SLOTS; s++) {
        if (((meta[2 * s + 1] as number) & 0xffff) === 0) {
          if (freeB < 0) freeB = s;
        } else usedB++;
      }
    } else usedB = BUCKET_SLOTS;
    let slot: number;
    if (free >= 0 && (freeB < 0 || usedA <= usedB)) slot = free;
    else if (freeB >= 0) slot = freeB;
    else {
      const bucket = a / BUCKET_SLOTS;
      const hand = this.#hands[bucket] as number;
      this.#hands[bucket] = (hand + 1) % BUCKET_SLOTS;
      slot = a + hand;
      this.victim.table = (meta[2 * slot + 1] as number) & 0xffff;
      this.victim.h1 = meta[2 * slot] as number;
      this.victim.h2 = ((meta[2 * slot + 1] as number) & 0xffff0000) >>> 0;
      this.victim.slot = slot;
      this.evicted++;
      this.size--;
    }
    meta[2 * slot] = h[0] as number;
    meta[2 * slot + 1] = ((h[1] as number) | table) >>> 0;
    this.size++;
    return slot;
  }

  /** Calls `visit(slot)` for every occupied slot of `table` (snapshots, purges). */
  forEach(table: number, visit: (slot: number, h1: number, h2: number) => void): void {
    const meta = this.#meta;
    const slots = this.capacity;
    for (let s = 0; s < slots; s++) {
      const tag = meta[2 * s + 1] as number;
      if ((tag & 0xffff) === table) visit(s, meta[2 * s] as number, (tag & 0xffff0000) >>> 0);
    }
  }
}

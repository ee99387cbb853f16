/**
 * One bucket of the compact table: the slot layout and the probing code that the in-process
 * table (compact-table.ts, an ArrayBuffer) and the shared table (shared-table.ts, a
 * SharedArrayBuffer) both run, so the two stores are one design.
 *
 * A bucket is `BUCKET_SLOTS` entries of `entryU32(stateWords)` 32-bit words each: the key's
 * fingerprint `h1`, its tag (the high 16 bits of `h2`, a pin bit, a returning bit and a 14-bit
 * table index; 0 means empty), then `stateWords` float64 words of state. Entries in use are a
 * prefix, in the order they were inserted: the first is the oldest, so a full bucket gives up
 * its first entry that may go (FIFO), and a removal shifts the later entries down to keep the
 * order.
 */

/** Entries per bucket. */
export const BUCKET_SLOTS = 8;
/** The largest table (rule) index an entry can name. */
export const MAX_TABLE_INDEX = 0x3fff;
/** Tag bit of an entry pinned by a reset (the shared store; see threads/room.ts). */
export const PINNED = 0x8000;
/**
 * Tag bit of an entry whose key came back after another key arrived in its bucket (the shared
 * store sets it when it updates such an entry: shared-word.wat `take`): a full bucket gives up
 * entries without it first, so a flood of one-shot keys cannot push out the keys that return
 * (threads/room.ts).
 */
export const RETURNING = 0x4000;
/** Tag bits that identify the key (fingerprint and table index, without the pin and returning bits). */
const KEY_BITS = ~(PINNED | RETURNING);

/** 32-bit words of one entry holding `stateWords` float64 words of state. */
export function entryU32(stateWords: number): number {
  return 2 + 2 * stateWords;
}

/** The tag stored for a key with high fingerprint bits `h2` (low 16 bits clear) under `table`. */
export function tagOf(h2: number, table: number): number {
  return (h2 | table) >>> 0;
}

/** The table index in a tag (0: empty). */
export function tableOfTag(tag: number): number {
  return tag & MAX_TABLE_INDEX;
}

/**
 * The key's bucket among `buckets`, from its third hash: one bucket per key, so a key's entry
 * can only ever be in one place (what lets the shared table update a bucket with a single
 * compare-and-swap and never insert one key twice). The table index is mixed in, so one key
 * under many rules spreads over the table too.
 */
export function bucketOf(table: number, h3: number, buckets: number): number {
  let x = (h3 ^ Math.imul(table, 0x9e3779b1)) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x = (x ^ (x >>> 16)) >>> 0;
  // Multiply-high maps 32 hash bits onto any bucket count without a power-of-two rounding.
  return Math.floor((x * buckets) / 0x100000000);
}

/** The entry of (`h1`, `tag`) in the bucket at `u32[base]`, or -1 (the pin and returning bits are ignored). */
export function findEntry(u32: Uint32Array, base: number, E: number, h1: number, tag: number): number {
  for (let e = 0, o = base; e < BUCKET_SLOTS; e++, o += E) {
    const t = u32[o + 1] as number;
    if (t === 0) return -1;
    if ((t & KEY_BITS) >>> 0 === tag && u32[o] === h1) return e;
  }
  return -1;
}

/** Entries in use in the bucket at `u32[base]`. */
export function countEntries(u32: Uint32Array, base: number, E: number): number {
  let n = 0;
  while (n < BUCKET_SLOTS && (u32[base + n * E + 1] as number) !== 0) n++;
  return n;
}

/**
 * Appends a key after the `count` entries in use (its state words are the caller's to fill) and
 * marks the new end: a bucket drafted in a recycled block holds stale entries past it.
 */
export function appendKey(u32: Uint32Array, base: number, E: number, count: number, h1: number, tag: number): void {
  const o = base + count * E;
  u32[o] = h1;
  u32[o + 1] = tag;
  if (count + 1 < BUCKET_SLOTS) u32[o + E + 1] = 0;
}

/** Removes entry `e` of a bucket holding `count`: the later entries move down (insertion order kept). */
export function removeEntry(u32: Uint32Array, base: number, E: number, e: number, count: number): void {
  const o = base + e * E;
  const end = base + count * E;
  if (o + E < end) u32.copyWithin(o, o + E, end);
  u32[end - E + 1] = 0;
}

/** The float64 index of entry `e`'s state in a Float64Array over the same buffer. */
export function stateAt(base: number, E: number, e: number): number {
  return (base + e * E + 2) >> 1;
}

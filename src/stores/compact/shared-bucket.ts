/**
 * A bucket of the shared table (shared-table.ts) whose entries are as wide as their rule: a
 * block holds `8 × (2 + 2 × R)` Int32 words (room for eight entries of the store's widest
 * record, `recordWords` R, as before), and each entry takes `2 + 2 × w` of them, w being the
 * words its rule's record needs. A rule needing 11 words no longer takes 24 in a store made
 * for 24, so the same budget holds twice the keys (docs/threads.md, "Wide records").
 *
 * An entry is the key's fingerprint `h1`, its tag, then w float64 words of state. The tag is
 * bucket.ts's with bits 16-22 holding w (0 for R, and for any w past 127, which takes R), bit 23
 * the `READ_BACK` mark: the fingerprint keeps the top 8 bits of `h2` there (40 bits in all). A shorter fingerprint can
 * only merge two keys' records, which then count both keys' units: over-counting, never an
 * admission past a limit. Entries in use are a prefix of the block in insertion order, and a
 * block with room for another entry's first two words ends with a tag of 0.
 */
import { MAX_TABLE_INDEX, PINNED, RETURNING } from "./bucket.ts";

/** Tag bits of an entry's width. */
export const WIDTH_BITS = 0x007f0000;
/** The widest width a tag names (a record wider takes R words: `widthCode`). */
export const MAX_WIDTH_CODE = 127;
/**
 * Tag bit of an entry whose record was read back from the summary and is not fresh since: a
 * bound of the key's state, not the state, so decisions from it say `approximate` (SPEC §10)
 * until the record is fresh again (threads/decide.ts). In the tag, not the record, so that every
 * rule has a place for it: a rule with a ban marks its ban state too (core/ban.ts), a rule
 * without one had none (a record exactly as wide as it needs has no word to spare). It took the
 * width's top bit: widths past 127 words take R, as those past 255 did.
 */
export const READ_BACK = 0x00800000;
/** Tag bits that identify a key: the fingerprint's top 8 bits and the table index. */
export const KEY_TAG = ~(WIDTH_BITS | PINNED | RETURNING | READ_BACK) >>> 0;
/** The fingerprint bits of `h2` that a tag keeps (the summary reads the same from both paths). */
export const H2_KEPT = 0xff000000;

/** The width code a tag carries for `width` words in a store of `R` (past 127: R, code 0). */
export function widthCode(width: number, R: number): number {
  return width === R || width > MAX_WIDTH_CODE ? 0 : width;
}

/** The state words of an entry whose tag is `tag`, in a store of `R`. */
export function widthOfTag(tag: number, R: number): number {
  const w = (tag >>> 16) & MAX_WIDTH_CODE;
  return w === 0 ? R : w;
}

/** The tag of a key whose fingerprint's high bits are `h2`, under table `table`, `width` words wide. */
export function wideTag(h2: number, table: number, width: number, R: number): number {
  return ((h2 & H2_KEPT) | (widthCode(width, R) << 16) | (table & MAX_TABLE_INDEX)) >>> 0;
}

/** Int32 words of the entry at `u32[o]`. */
export function entrySize(u32: Uint32Array, o: number, R: number): number {
  return 2 + 2 * widthOfTag(u32[o + 1] as number, R);
}

/** The float64 index of the state of the entry at `u32[o]`. */
export function stateOf(o: number): number {
  return (o + 2) >> 1;
}

/**
 * Appends an entry (its state words are the caller's to fill) at `used` Int32 words into the
 * block at `u32[base]` of `cap` words, and marks the new end: a block drafted in a recycled one
 * holds stale entries past it. Returns the entry's u32 index.
 */
export function appendWide(
  u32: Uint32Array,
  base: number,
  cap: number,
  used: number,
  h1: number,
  tag: number,
  R: number,
): number {
  const o = base + used;
  u32[o] = h1;
  u32[o + 1] = tag;
  const end = used + 2 + 2 * widthOfTag(tag, R);
  if (end + 2 <= cap) u32[base + end + 1] = 0;
  return o;
}

/**
 * Removes the entry at `u32[o]` from the block at `u32[base]` whose entries take `used` words:
 * the later entries move down (insertion order kept). Returns the words now in use.
 */
export function removeWide(u32: Uint32Array, base: number, used: number, o: number, R: number): number {
  const end = base + used;
  // Bounded by what is in use: a draft copied while another thread published may hold a torn
  // width, and must not reach past this block (it is never published: the word check).
  const size = Math.min(entrySize(u32, o, R), end - o);
  if (o + size < end) u32.copyWithin(o, o + size, end);
  u32[end - size + 1] = 0;
  return used - size;
}

/** Entries and Int32 words in use in the block at `u32[base]` of `cap` words. */
export function usedWords(u32: Uint32Array, base: number, cap: number, R: number): { entries: number; words: number } {
  let o = 0;
  let entries = 0;
  while (o + 2 <= cap) {
    const tag = u32[base + o + 1] as number;
    if (tag === 0) break;
    const next = o + 2 + 2 * widthOfTag(tag, R);
    if (next > cap) break;
    o = next;
    entries++;
  }
  return { entries, words: o };
}

/**
 * A sliding log (or lease log) of several entries as a per-key bound that does not drift (issue
 * 34): the newest entry exactly, every older entry rounded LATER onto an absolute grid of `u` ms
 * (a power of two, so every coarser grid's points are points of the finer ones), each grid cell's
 * entries counted in unary. Why a grid anchored at a fixed instant and not an offset back from the newest: a
 * key's record is decoded, takes a new entry and is encoded again at every request; an offset
 * from the newest re-rounds at each encoding, so older entries creep later and later (the old
 * "n entries at the newest" layout grew by one per request: a steady key at a third of its limit
 * was refused), while a grid point stays where it is. An entry read back is never earlier than
 * itself, and never later than its cell's end on the coarsest grid it was ever encoded on (less
 * than `p` ms, about W/2 to W, and W/8 or finer for keys that send little): it counts at most
 * that much longer, so the bound admits no more than the log in any window from now on, under
 * any limit, and re-encoding it (the same grid or another) loses nothing more.
 *
 * The payload is a negative float64 in (-2, 0) whose bits carry it (sign set, the exponent's top
 * bit clear and the next one set: never NaN, an infinity, zero or subnormal), so no exact entry
 * (≥ 0) and no older bound (a negative integer ≤ -3) is read as one. The code is read from its
 * top bit down: a 1 is an entry in the current cell, a 0 moves to the next older cell; cell 0 is
 * the newest's own (read at the newest), cell i > 0 at `(j − i) · u + GRID_SHIFT`, j the index
 * of the newest's own point (`pointIndex`).
 */
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";

const view = new DataView(new ArrayBuffer(8));

/** A payload's two 32-bit halves as the float64 that carries them (see the module). */
export function payloadWord(hi: number, lo: number): number {
  // Bit 31 sign, bit 30 clear, bit 29 set: a normal negative number of magnitude below 2.
  // Little-endian: the low half first.
  view.setUint32(4, (0x80000000 | 0x20000000 | (hi & 0x1fffffff)) >>> 0, true);
  view.setUint32(0, lo >>> 0, true);
  return view.getFloat64(0, true);
}

/** Whether `word` is a payload word written by `payloadWord`. */
export function isPayload(word: number): boolean {
  return word < 0 && word > -2;
}

/** The 29 high and 32 low bits of a payload word. */
export function payloadOf(word: number): [number, number] {
  view.setFloat64(0, word, true);
  return [view.getUint32(4, true) & 0x1fffffff, view.getUint32(0, true)];
}

/** log2 of the coarsest grid for a window of `W` ms: the least power of two ≥ W/2 (at least 1), so live entries span ≤ 3 cells. */
export function coarsestGrid(W: number): number {
  let k = 0;
  while (2 ** k < W / 2 && k < 52) k++;
  return k;
}

/**
 * A unary code of up to 60 bits as [hi, lo] halves, with the grid it was written on: `2^k` ms,
 * stored with the code (not derived from the window: a lease log keeps its records when
 * `leaseMs` changes, and must read back on the grid it was written on).
 */
export interface GridCode {
  k: number;
  hi: number;
  lo: number;
}

/**
 * Where grid points sit within a ms: `j · 2^k + GRID_SHIFT` (2^-10 ms), never on a whole ms. Why
 * (issue 34): a refund with a receipt takes back entries logged at exactly that instant; a grid
 * point on a whole ms (where receipts of a ms clock are) would read an older entry rounded
 * onto it as that receipt's, and a refund would take it from the bound while the log keeps it
 * (packed-log-bound.test.ts found it). The shift is the same on every grid, so a coarser grid's
 * points are still points of every finer one, and a point re-encoded stays where it is.
 */
export const GRID_SHIFT = 2 ** -10;

/** The index of the first point of grid `u` at or after `e` (its point never earlier than `e`, in floats too). */
export function pointIndex(e: number, u: number): number {
  let j = Math.ceil((e - GRID_SHIFT) / u);
  while (j * u + GRID_SHIFT < e) j++;
  return j;
}

/**
 * The finest grid, `2^k` ms for k from `finest` up to `coarsest`, on which the entries of `s`
 * still counting at `T` (its newest, ≥ 0) fit a unary code of `bits` bits, or undefined.
 * Entries at or before `cut` (T − W) are left out: a log reads every clock behind its newest as
 * the newest, so they never count again (the log step dropped them at that entry's commit
 * anyway). A caller that writes a newest later than the log's own passes the real one's cut.
 */
export function encodeGrid(
  s: SlidingLogState,
  T: number,
  W: number,
  bits: number,
  finest: number,
  coarsest: number,
  cut = T - W,
): GridCode | undefined {
  const len = s.buf.length;
  for (let k = Math.max(0, finest); k <= coarsest; k++) {
    const u = 2 ** k;
    const base = pointIndex(T, u);
    // Cells of the entries, newest first (the code is written from cell 0 back).
    let hi = 0;
    let lo = 0;
    let pos = bits - 1;
    let cell = 0;
    let fits = true;
    for (let i = s.n - 1; i >= 0; i--) {
      const e = s.buf[(s.head + i) % len] as number;
      if (!(e > cut)) continue;
      const c = Math.max(0, base - pointIndex(e, u));
      // A log is in time order; one that is not would read an entry earlier than itself.
      if (c < cell) return undefined;
      // Older cells in between: one 0 each.
      if (c > cell) {
        pos -= c - cell;
        cell = c;
      }
      if (pos < 0) {
        fits = false;
        break;
      }
      if (pos >= 32) hi |= 1 << (pos - 32);
      else lo |= 1 << pos;
      pos--;
    }
    if (fits) return { k, hi: hi >>> 0, lo: lo >>> 0 };
  }
  return undefined;
}

/** The log a `GridCode` of `bits` bits holds under newest `T` (oldest first). */
export function decodeGrid(code: GridCode, T: number, bits: number): SlidingLogState {
  const u = 2 ** code.k;
  const base = pointIndex(T, u);
  const out: number[] = [];
  let cell = 0;
  for (let pos = bits - 1; pos >= 0; pos--) {
    const bit = pos >= 32 ? (code.hi >>> (pos - 32)) & 1 : (code.lo >>> pos) & 1;
    if (bit === 1) out.push(cell === 0 ? T : (base - cell) * u + GRID_SHIFT);
    else cell++;
  }
  out.reverse();
  return { buf: out, head: 0, n: out.length };
}

/**
 * The entries of `s` still counting at `T` (its newest) as counts per cell of the grid `2^k` ms,
 * cells 0 to `max.length − 1` newest first (cell 0 the newest's own), each below its `max`; or
 * undefined. Why (issue 34): a unary code of 14 bits holds at most 12 entries even on the
 * coarsest grid, and a log steady at a third of a limit of 40 holds 13 or more; on a grid of
 * W/2 ms or coarser live entries span at most three cells, so three counts hold far more. The
 * entries read back are those the unary code of the same grid would give (`countsLog`).
 */
export function cellCounts(
  s: SlidingLogState,
  T: number,
  W: number,
  k: number,
  max: number[],
  cut = T - W,
): number[] | undefined {
  const len = s.buf.length;
  const u = 2 ** k;
  const base = pointIndex(T, u);
  const counts = max.map(() => 0);
  let cell = 0;
  for (let i = s.n - 1; i >= 0; i--) {
    const e = s.buf[(s.head + i) % len] as number;
    if (!(e > cut)) continue;
    const c = Math.max(0, base - pointIndex(e, u));
    if (c < cell || c >= max.length) return undefined;
    cell = c;
    counts[c] = (counts[c] as number) + 1;
    if ((counts[c] as number) > (max[c] as number)) return undefined;
  }
  return counts;
}

/** The log counts per cell of grid `2^k` (written by `cellCounts`) hold under newest `T` (oldest first). */
export function countsLog(counts: number[], T: number, k: number): SlidingLogState {
  const u = 2 ** k;
  const base = pointIndex(T, u);
  const out: number[] = [];
  for (let c = counts.length - 1; c >= 0; c--) {
    for (let i = 0; i < (counts[c] as number); i++) out.push(c === 0 ? T : (base - c) * u + GRID_SHIFT);
  }
  return { buf: out, head: 0, n: out.length };
}

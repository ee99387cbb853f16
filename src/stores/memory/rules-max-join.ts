/**
 * Joining a state into a MemoryStore summary cell by its *maximum*, not its sum (issue 34, "any
 * number of rules"). A cell must dominate every state joined into it (admit no more than any of
 * them would); the least state that does is their join in each member's own order:
 *
 * - fixed window: the later window, and within one window the larger count;
 * - sliding window: both seen from the later window, the larger previous and current counts
 *   (its estimate grows with each);
 * - sliding log / concurrency: per window the larger count and the later newest instant (the
 *   cell reads back as that many entries at that instant: each source's entries are no later
 *   and no more);
 * - token bucket, gcra, leaky bucket: the later instant the state owes nothing (a later one
 *   admits less at every instant);
 * - a ban: joined as before (summary-codec.ts `joinBan`: overlapping strikes add up).
 *
 * Why: summed, a cell stood for every key joined into it, so a flood over many rules (each
 * summary a few cells wide) made every cell read "full" after a few dozen one-request keys
 * (700 flooded rules refused 12% of returning keys). The maximum of one-request keys is one
 * request. Soundness needs what is joined to dominate the key's whole state: an exact record
 * does; a key read back from a summary joins its whole estimate (the summary's row with what
 * it took since added on top, which is what it decides on), never only what it took since.
 * A maximum is idempotent, so joining a key twice (again after a read-back, or a compact bound
 * pushed out) counts it once.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { FixedWindowState } from "../../algorithms/fixed-window.ts";
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { SlidingWindowState } from "../../algorithms/sliding-window.ts";
// The cell helpers are the additive join's (one definition of a cell's layout and windows).
import { isEmpty, rateInstant, shift, windowOf } from "../compact/summary-codec.ts";

/** Joins member `m`'s `state` (as of `now`) into the cell at `at` by its maximum (see the file's header). */
export function maxJoinMember(m: Algorithm, cells: Float64Array, at: number, state: unknown, now: number): void {
  switch (m.kind) {
    case "fixed-window": {
      const s = state as FixedWindowState;
      if (!(s.c > 0)) return;
      const w = cells[at] as number;
      if (Number.isNaN(w) || s.w > w) {
        cells[at] = s.w;
        cells[at + 1] = s.c;
      } else if (s.w === w && s.c > (cells[at + 1] as number)) cells[at + 1] = s.c;
      return; // an older window no longer counts
    }
    case "sliding-window": {
      const s = state as SlidingWindowState;
      if (!(s.p > 0 || s.c > 0)) return;
      if (isEmpty(cells, at)) {
        cells[at] = s.w;
        cells[at + 1] = s.p;
        cells[at + 2] = s.c;
        return;
      }
      const W = windowOf(m);
      const w = cells[at] as number;
      const later = Math.max(w, s.w);
      const [p1, c1] = shift(w, cells[at + 1] as number, cells[at + 2] as number, later, W);
      const [p2, c2] = shift(s.w, s.p, s.c, later, W);
      cells[at] = later;
      cells[at + 1] = Math.max(p1, p2);
      cells[at + 2] = Math.max(c1, c2);
      return;
    }
    case "sliding-log":
    case "concurrency": {
      const s = state as SlidingLogState;
      if (s.n === 0) return;
      const W = windowOf(m);
      const len = s.buf.length;
      const newest = s.buf[(s.head + s.n - 1) % len] as number;
      const ws = Math.floor(newest / W) * W;
      let p = 0;
      let pt = Number.NEGATIVE_INFINITY;
      let c = 0;
      let ct = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < s.n; i++) {
        const t = s.buf[(s.head + i) % len] as number;
        const b = Math.floor(t / W) * W;
        if (b >= ws) {
          c++;
          ct = Math.max(ct, t);
        } else if (b === ws - W) {
          p++;
          pt = Math.max(pt, t);
        } // older entries stopped counting before the newest was taken
      }
      maxJoinLog(cells, at, W, ws, p, pt, c, ct);
      return;
    }
    default: {
      const until = rateInstant(m, state);
      if (!(until > now)) return; // nothing owed any more
      const cell = cells[at] as number;
      if (Number.isNaN(cell) || until > cell) cells[at] = until;
    }
  }
}

/** Joins a log's (previous-window, current-window) counts and newest instants into a cell by their maximum. */
function maxJoinLog(
  cells: Float64Array,
  at: number,
  W: number,
  ws: number,
  p: number,
  pt: number,
  c: number,
  ct: number,
): void {
  if (isEmpty(cells, at)) {
    cells.set([ws, p, pt, c, ct], at);
    return;
  }
  const w = cells[at] as number;
  const later = Math.max(w, ws);
  const view = (cw: number, cp: number, cpt: number, cc: number, cct: number): [number, number, number, number] => {
    if (cw === later) return [cp, cpt, cc, cct];
    if (cw === later - W) return [cc, cct, 0, Number.NEGATIVE_INFINITY];
    return [0, Number.NEGATIVE_INFINITY, 0, Number.NEGATIVE_INFINITY];
  };
  const [p1, pt1, c1, ct1] = view(
    w,
    cells[at + 1] as number,
    cells[at + 2] as number,
    cells[at + 3] as number,
    cells[at + 4] as number,
  );
  const [p2, pt2, c2, ct2] = view(ws, p, pt, c, ct);
  cells.set([later, Math.max(p1, p2), Math.max(pt1, pt2), Math.max(c1, c2), Math.max(ct1, ct2)], at);
}

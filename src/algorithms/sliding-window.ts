/**
 * Sliding window counter: the current and previous fixed-window counts, the previous one
 * weighted by how much of it still overlaps the rolling window. O(1) memory and close to exact
 * (it assumes the previous window's requests were evenly spread). Choose it for public APIs
 * with large limits (search: 100/min per key) where a sliding log would cost too much memory.
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { SlidingWindowSpec } from "./specs.ts";

/** Sliding-window state: start `w` of the current window, previous count `p`, current count `c`. */
export interface SlidingWindowState {
  w: number;
  p: number;
  c: number;
}

/**
 * Largest `limit × windowMs` for which every product in the integer comparison stays exact in
 * a double (and in Redis Lua, whose numbers are doubles too). The validator enforces it.
 */
export const SLIDING_WINDOW_MAX_PRODUCT = 2 ** 51;

/** Builds the sliding-window step for `spec`. */
export function slidingWindow(spec: SlidingWindowSpec): Algorithm<SlidingWindowState> {
  const { limit: L, windowMs: W } = spec;
  const LW = L * W;
  return {
    kind: "sliding-window",
    spec,
    limit: L,
    horizonMs: 2 * W,
    create: () => ({ w: Number.NEGATIVE_INFINITY, p: 0, c: 0 }),
    freshAt: (s) => (s.c > 0 ? s.w + 2 * W : s.p > 0 ? s.w + W : Number.NEGATIVE_INFINITY),
    shape: `sliding-window/${W}`,
    summary: {
      slots: 3,
      join(cells, at, state) {
        const w = cells[at] as number;
        if (Number.isNaN(w)) {
          cells[at] = state.w;
          cells[at + 1] = state.p;
          cells[at + 2] = state.c;
          return;
        }
        // Both read as of the later window, then the larger count of each window.
        const later = Math.max(w, state.w);
        const [p1, c1] = shifted(w, cells[at + 1] as number, cells[at + 2] as number, later);
        const [p2, c2] = shifted(state.w, state.p, state.c, later);
        cells[at] = later;
        cells[at + 1] = Math.max(p1, p2);
        cells[at + 2] = Math.max(c1, c2);
      },
      read: (cells, at) =>
        Number.isNaN(cells[at])
          ? undefined
          : { w: cells[at] as number, p: cells[at + 1] as number, c: cells[at + 2] as number },
    },
    refund(state, now, cost, at) {
      const s = Math.max(Math.floor(now / W) * W, state.w);
      if (at !== undefined) {
        // With a receipt: only the window the check was counted in, while it still weighs.
        const from = Math.floor(at / W) * W;
        if (state.w === s && from === s) state.c = Math.max(0, state.c - cost);
        else if (state.w === s && from === s - W) state.p = Math.max(0, state.p - cost);
        else if (state.w === s - W && from === s - W) state.c = Math.max(0, state.c - cost);
        return;
      }
      if (state.w === s) {
        // This window's units first; what is left of the refund comes off the previous window.
        const fromCurrent = Math.min(state.c, cost);
        state.c -= fromCurrent;
        state.p = Math.max(0, state.p - (cost - fromCurrent));
      } else if (state.w === s - W) {
        state.c = Math.max(0, state.c - cost); // the stored current window is now the previous one
      }
    },
    force(state, now, cost) {
      // The units count in the current window (read as step reads it), past the limit if need be.
      const s = Math.max(Math.floor(now / W) * W, state.w);
      const [p, c] = state.w === s ? [state.p, state.c] : state.w === s - W ? [state.c, 0] : [0, 0];
      state.w = s;
      state.p = p;
      state.c = c + cost;
    },
    step(state, now, cost, commit): Decision {
      // A clock that stepped back into an older window keeps the stored window.
      const s = Math.max(Math.floor(now / W) * W, state.w);
      let prev = 0;
      let cur = 0;
      if (state.w === s) {
        prev = state.p;
        cur = state.c;
      } else if (state.w === s - W) {
        prev = state.c;
      }
      const el = Math.max(0, now - s);
      const weighted = prev * (W - el);
      // (A cost above the limit never passes: counts are never negative.)
      const allowed = cost <= L && weighted + (cur + cost) * W <= LW;
      if (allowed) {
        cur += cost;
        if (commit) {
          state.w = s;
          state.p = prev;
          state.c = cur;
        }
      }
      // One Decision for every outcome, the refusal's retry a call away: V8 inlines each call
      // site's callees apart, and three copies of `decision` put the step (409 bytes of bytecode)
      // past what the hot path can inline whole (callgrind: the coarse-clock hot key paid ~880
      // instructions a decision for it).
      return decision(
        allowed,
        L,
        remainingOf(weighted, cur),
        allowed ? 0 : cost > L ? Number.POSITIVE_INFINITY : retryAt(s, prev, cur, cost, now),
        resetOf(s, now, prev, cur),
      );
    },
  };

  /** ms until a refused `cost` (at most the limit) fits, in window `s` with `prev` and `cur` counted. */
  function retryAt(s: number, prev: number, cur: number, cost: number, now: number): number {
    return Math.ceil(passesAt(s, prev, cur, cost) - now);
  }

  // Module-level to the step, not closures made per decision (each call allocated two).
  /** Whole units left with `c` counted in the current window and `weighted` carried from the previous one. */
  function remainingOf(weighted: number, c: number): number {
    return Math.max(0, Math.floor((LW - weighted - c * W) / W));
  }

  /** ms until the key is fresh again, in window `s` with `prev` and `c` counted. */
  function resetOf(s: number, now: number, prev: number, c: number): number {
    return Math.ceil(c > 0 ? s + 2 * W - now : prev > 0 ? s + W - now : 0);
  }

  /** Counts `(p, c)` of a state stored for window `w`, as seen from the later window `later`. */
  function shifted(w: number, p: number, c: number, later: number): [number, number] {
    if (w === later) return [p, c];
    return w === later - W ? [c, 0] : [0, 0];
  }

  /** The first whole ms at which `prev·(W − el) + (cur + cost)·W ≤ L·W` holds, state unchanged. */
  function passesAt(s: number, prev: number, cur: number, cost: number): number {
    const room = L - cur - cost;
    if (room >= 0 && prev > 0) {
      // Within this window: need W − el ≤ room·W / prev.
      const elMin = W - Math.floor((room * W) / prev);
      if (elMin < W) return s + Math.max(0, elMin);
    }
    // In the next window `cur` becomes the previous count and the current one starts at 0.
    if (cur === 0) return s + W;
    const elMin = W - Math.floor(((L - cost) * W) / cur);
    return s + W + Math.max(0, elMin);
  }
}

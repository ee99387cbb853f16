/**
 * Fixed window: one counter per key per aligned window. Cheapest possible (two numbers per key)
 * and easy to explain, but a client can send `limit` just before a boundary and `limit` again
 * just after it: up to 2·limit in a short span. Choose it for coarse quotas ("1000 per day").
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { FixedWindowSpec } from "./specs.ts";

/** Fixed-window state: the start of the stored window and its count. */
export interface FixedWindowState {
  w: number;
  c: number;
}

/** Builds the fixed-window step for `spec`. */
export function fixedWindow(spec: FixedWindowSpec): Algorithm<FixedWindowState> {
  const { limit, windowMs: W } = spec;
  return {
    kind: "fixed-window",
    spec,
    limit,
    horizonMs: W,
    create: () => ({ w: Number.NEGATIVE_INFINITY, c: 0 }),
    freshAt: (state) => state.w + W,
    shape: `fixed-window/${W}`,
    summary: {
      slots: 2,
      join(cells, at, state) {
        // The later window wins; within one window the larger count (neither admits more).
        const w = cells[at] as number;
        if (Number.isNaN(w) || state.w > w) {
          cells[at] = state.w;
          cells[at + 1] = state.c;
        } else if (state.w === w && state.c > (cells[at + 1] as number)) cells[at + 1] = state.c;
      },
      read: (cells, at) =>
        Number.isNaN(cells[at]) ? undefined : { w: cells[at] as number, c: cells[at + 1] as number },
    },
    refund(state, now, cost, at) {
      // Only the current window's units can come back: an older window no longer counts; with a
      // receipt, only if the check was counted in that window too (else its unit is gone already).
      if (state.w !== Math.max(Math.floor(now / W) * W, state.w)) return;
      if (at !== undefined && Math.floor(at / W) * W !== state.w) return;
      state.c = Math.max(0, state.c - cost);
    },
    step(state, now, cost, commit): Decision {
      // A clock that stepped back into an older window keeps the stored window ("no time passed").
      const s = Math.max(Math.floor(now / W) * W, state.w);
      const count = state.w === s ? state.c : 0;
      const end = Math.ceil(s + W - now);
      // A count kept from a larger limit (updateRule) may exceed this one: remaining is never negative.
      const left = Math.max(0, limit - count);
      if (cost > limit) return decision(false, limit, left, Number.POSITIVE_INFINITY, count > 0 ? end : 0);
      if (count + cost > limit) return decision(false, limit, left, end, count > 0 ? end : 0);
      const c = count + cost;
      if (commit) {
        state.w = s;
        state.c = c;
      }
      // c is 0 only for cost 0 (a composite restating an unconsumed member): then nothing to reset.
      return decision(true, limit, limit - c, 0, c > 0 ? end : 0);
    },
  };
}

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

/**
 * Fixed window: one counter per key per aligned window. Cheapest possible (two numbers per key)
 * and easy to explain, but a client can send `limit` just before a boundary and `limit` again
 * just after it: up to 2·limit in a short span. Choose it for coarse quotas ("1000 per day").
 * With `anchor: "first"` a key's window starts at its first counted request instead (as
 * express-rate-limit, rate-limiter-flexible and Nest count): a full window for everyone, at the
 * price of windows that no longer line up across keys (docs/algorithms-first-hit.md).
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { FixedWindowSpec } from "./specs.ts";

/** Fixed-window state: the start of the stored window and its count. */
export interface FixedWindowState {
  w: number;
  c: number;
}

/** Builds the fixed-window step for `spec` (aligned, or anchored at the first hit). */
export function fixedWindow(spec: FixedWindowSpec): Algorithm<FixedWindowState> {
  return spec.anchor === "first" ? firstHitWindow(spec) : alignedWindow(spec);
}

/** Windows aligned to multiples of `windowMs` since epoch 0. */
function alignedWindow(spec: FixedWindowSpec): Algorithm<FixedWindowState> {
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
    force(state, now, cost) {
      const s = Math.max(Math.floor(now / W) * W, state.w);
      state.c = (state.w === s ? state.c : 0) + cost;
      state.w = s;
    },
    step(state, now, cost, commit): Decision {
      // A clock that stepped back into an older window keeps the stored window ("no time passed").
      const s = Math.max(Math.floor(now / W) * W, state.w);
      const count = state.w === s ? state.c : 0;
      const end = Math.ceil(s + W - now);
      const c = count + cost;
      // (Counts are never negative, so a cost above the limit is refused here too.)
      const allowed = c <= limit;
      if (allowed && commit) {
        state.w = s;
        state.c = c;
      }
      // One Decision built for both outcomes: the step stays small enough for V8 to inline on
      // the hot path (a second call site would be inlined apart). A count kept from a larger
      // limit (updateRule) may exceed this one: remaining is never negative. `c` is 0 only for
      // cost 0 (a composite restating an unconsumed member): then nothing to reset.
      return decision(
        allowed,
        limit,
        allowed ? limit - c : Math.max(0, limit - count),
        allowed ? 0 : cost > limit ? Number.POSITIVE_INFINITY : end,
        (allowed ? c : count) > 0 ? end : 0,
      );
    },
  };
}

/**
 * Windows that start at a key's first counted request and last `windowMs`; the next counted
 * request after one ends starts the next. Same state as the aligned variant ({ w, c }, `w` now
 * any instant), but another shape, so neither ever reads the other's records.
 */
function firstHitWindow(spec: FixedWindowSpec): Algorithm<FixedWindowState> {
  const { limit, windowMs: W } = spec;
  return {
    kind: "fixed-window",
    spec,
    limit,
    horizonMs: W,
    create: () => ({ w: Number.NEGATIVE_INFINITY, c: 0 }),
    freshAt: (state) => state.w + W,
    shape: `fixed-window-first/${W}`,
    summary: {
      slots: 2,
      join(cells, at, state) {
        // The later start and the larger count: the joined window ends last and holds most,
        // so it denies whatever either state denies, at every instant (windows need not align).
        const w = cells[at] as number;
        if (Number.isNaN(w)) {
          cells[at] = state.w;
          cells[at + 1] = state.c;
          return;
        }
        cells[at] = Math.max(w, state.w);
        cells[at + 1] = Math.max(cells[at + 1] as number, state.c);
      },
      read: (cells, at) =>
        Number.isNaN(cells[at]) ? undefined : { w: cells[at] as number, c: cells[at + 1] as number },
    },
    refund(state, now, cost) {
      // Only a running window's units can come back; the window keeps its start.
      if (now < state.w + W) state.c = Math.max(0, state.c - cost);
    },
    force(state, now, cost) {
      // Past the limit in the running window, or opening the next one with the units taken.
      if (now < state.w + W) state.c += cost;
      else {
        state.w = now;
        state.c = cost;
      }
    },
    step(state, now, cost, commit): Decision {
      // A running window holds (a clock that stepped back before its start included: "no time
      // passed"); once it has ended, this request would open the next one, at `now`.
      const running = now < state.w + W;
      const s = running ? state.w : now;
      const count = running ? state.c : 0;
      const end = Math.ceil(s + W - now);
      const left = Math.max(0, limit - count);
      if (cost > limit) return decision(false, limit, left, Number.POSITIVE_INFINITY, count > 0 ? end : 0);
      if (count + cost > limit) return decision(false, limit, left, end, count > 0 ? end : 0);
      const c = count + cost;
      if (commit && cost > 0) {
        // (A composite restating an unconsumed member commits cost 0: no window opens for it.)
        state.w = s;
        state.c = c;
      }
      return decision(true, limit, limit - c, 0, c > 0 ? end : 0);
    },
  };
}

/**
 * The admission rule of `loadShed`, after Stripe's fleet-usage load shedder: a share of the
 * limit is held back for the more critical priorities, so the least critical traffic is shed
 * first and critical traffic keeps its reserve under any flood of the rest. Pure.
 *
 * `reserve: { 1: 0.2 }` holds 20% of the limit for priorities 0 and 1: requests of priority 2
 * to 9 may fill only the other 80%, so at least 20% stays free for 0 and 1 whatever the rest
 * send. Reserves nest: `{ 0: 0.1, 3: 0.2 }` leaves 90% to priorities 1–3 and 70% to 4–9.
 */
import { PRIORITY_LEVELS } from "./pressure.ts";

/** Shares of the limit held back, by the least critical priority allowed to use them. */
export type Reserve = Readonly<Record<number, number>>;

/**
 * For each priority 0–9, the shares of the limit it may not use: the sum of the reserves held
 * for more critical levels than its own.
 */
export function heldShares(reserve: Reserve): number[] {
  const held = new Array<number>(PRIORITY_LEVELS).fill(0);
  for (let priority = 1; priority < PRIORITY_LEVELS; priority++) {
    held[priority] = (held[priority - 1] as number) + (reserve[priority - 1] ?? 0);
  }
  return held;
}

/**
 * How many requests may be in flight when one of each priority arrives, for `limit`: the limit
 * less the slots held for more critical levels, rounded so that the reserve is never smaller
 * than its share (a share of a slot holds the whole slot).
 *
 * `steady` (default `limit`) is the limit outside an adaptive probe. While the probe holds the
 * limit at `minLimit` to re-measure the unloaded latency, the levels a reserve covers keep
 * their allowance of the steady limit, and only the uncovered ones are held to the probe's:
 * otherwise a probe would shrink the reserve to a share of `minLimit` and shed critical
 * requests for a window every probe interval.
 */
export function allowances(limit: number, held: readonly number[], steady = limit): number[] {
  // Levels 0–8 can hold a reserve, 9 cannot: the last level's held share is the whole reserve,
  // and a level holding less than that is covered by some reserve.
  const total = held[held.length - 1] ?? 0;
  return held.map((share) => {
    const base = share < total ? steady : limit;
    // The epsilon keeps 10 × 0.2 at 2 slots, not 3, despite binary fractions.
    return Math.max(0, base - Math.ceil(base * share - 1e-9));
  });
}

/** Whether a request of `priority` is admitted with `inFlight` requests already running. */
export function admits(inFlight: number, priority: number, allowance: readonly number[], cutoff: number): boolean {
  return priority < cutoff && inFlight < (allowance[priority] as number);
}

/**
 * How many levels a reserve covers: priorities below this may use some reserve (0 without one).
 * Only they can be refused by requests of less critical levels holding more than their share.
 */
export function coveredLevels(held: readonly number[]): number {
  const total = held[held.length - 1] ?? 0;
  let covered = 0;
  while (covered < held.length && (held[covered] as number) < total) covered++;
  return covered;
}

/**
 * Whether a request of `priority` fits when the less critical levels are counted at most at
 * their allowance (`byLevel[q]`: requests of priority q in flight). {@link admits} counts
 * every request in flight; after an adaptive limit is cut, the less critical levels may still
 * hold more than their new share (admitted under the old limit, they run until they finish),
 * and counted whole they would take the reserve's slots: the reserve would be a share of the
 * old limit less the overhang, however small. Counted at their allowance, the levels a reserve
 * covers always find the slots it holds for them, whatever the rest holds. Nested reserves
 * cap each group of levels at its own allowance, from the least critical up.
 */
export function fitsReserve(byLevel: readonly number[], priority: number, allowance: readonly number[]): boolean {
  let below = 0;
  for (let q = byLevel.length - 1; q > priority; q--) {
    below = Math.min(below + (byLevel[q] as number), allowance[q] as number);
  }
  let own = 0;
  for (let q = 0; q <= priority; q++) own += byLevel[q] as number;
  return own + below < (allowance[priority] as number);
}

/**
 * A bucket unit's slot (issue 32). A gcra (or token-bucket) unit granted at `a` with the record's
 * theoretical arrival time `X` before it has its slot at `S = max(X, a)`: the slots of successive
 * units are spaced by at least the emission interval `T`, and `S − a` is the backlog the grant
 * found (at most `τ' − cost·T`, τ' the checked tolerance). A task that starts anywhere in
 * `[a, S]` is then as good for every rolling window as one at `a` (docs/throttle.md "The rate
 * holds on the tasks' own starts"): its start is not late, and its unit needs no move. At
 * saturation the backlog is most of τ', so most of a busy process's lateness costs no store call.
 *
 * The slack leaves the store in the grant (queue.lua, fleet-queue-host.ts) or the Decision (a
 * local limiter), computed here from the decision's figures: for an allowed gcra decision
 * `resetMs = ⌈backlog + cost·T⌉`, so `backlog > resetMs − 1 − cost·T` (a token bucket's `resetMs`
 * is the same figure: the time to refill what it lacks). Rounded down, never below 0.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { AlgorithmSpec } from "./spec.ts";

/** A member's emission interval (ms per unit) when its units have slots (gcra, token bucket); undefined otherwise. */
export function slotIntervalMs(spec: AlgorithmSpec): number | undefined {
  const s = spec as { algorithm: string; limit?: number; periodMs?: number; refillPerSecond?: number };
  if (s.algorithm === "gcra") return (s.periodMs as number) / (s.limit as number);
  if (s.algorithm === "token-bucket") return 1000 / (s.refillPerSecond as number);
  return undefined;
}

/** How far past its decided instant the slot of a bucket member's allowed unit of `cost` starts (ms, whole, ≥ 0). */
export function memberSlackMs(intervalMs: number, resetMs: number, cost: number): number {
  const slack = Math.floor(resetMs - 1 - cost * intervalMs);
  return slack > 0 && Number.isFinite(slack) ? slack : 0;
}

/**
 * How many ms after its decided instant the task of an allowed decision `d` (of `cost` units, on
 * the rule `specs`) may start without its unit being moved: the least over the members (a
 * gcra or token bucket: its slot's start; any other member: 0, its own rules). 0 for a refused
 * or approximate decision, a leaky bucket's delay, or a decision without the member figures.
 */
export function slotSlackMs(specs: readonly AlgorithmSpec[] | undefined, d: Decision, cost: number): number {
  if (specs === undefined || specs.length === 0 || !d.allowed || d.delayMs > 0 || d.approximate === true) return 0;
  const parts = specs.length === 1 ? [d] : d.parts;
  if (parts === undefined || parts.length < specs.length) return 0;
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < specs.length && least > 0; i++) {
    const t = slotIntervalMs(specs[i] as AlgorithmSpec);
    const slack = t === undefined ? 0 : memberSlackMs(t, (parts[i] as Decision).resetMs, cost);
    if (slack < least) least = slack;
  }
  return Number.isFinite(least) ? least : 0;
}

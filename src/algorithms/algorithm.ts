/**
 * The contract every algorithm implements. An algorithm is a pure step over a small mutable
 * state record: no clock reads, no I/O, no timers. Stores own the records and run the step
 * atomically (a synchronous call in-process, a Lua twin in Redis).
 */
import type { Decision } from "./decision.ts";
import type { AlgorithmName, AlgorithmSpec } from "./specs.ts";

/**
 * One algorithm bound to its parameters.
 *
 * `step` decides `cost` units at `now` against `state`. When `commit` is true and the request
 * is allowed it updates `state` in place; otherwise it leaves `state` untouched (a denied
 * request and a peek change nothing). State records from a fresh key come from `create()`.
 */
export interface Algorithm<S = unknown> {
  /** Which algorithm this is. */
  readonly kind: AlgorithmName;
  /** The normalised spec it was built from. */
  readonly spec: AlgorithmSpec;
  /** What decisions report as `limit` (limit, capacity or burst). */
  readonly limit: number;
  /** The longest a key's state can stay different from a fresh key's after its last change. */
  readonly horizonMs: number;
  /** A fresh key's state. */
  create(): S;
  /** Decides, and updates `state` in place when `commit` and allowed. */
  step(state: S, now: number, cost: number, commit: boolean): Decision;
  /** The instant from which `state` behaves exactly like `create()` (so it may be dropped). */
  freshAt(state: S): number;
}

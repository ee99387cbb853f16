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
  /**
   * Gives `cost` units back at `now` (a request that turned out not to count), in place. Never
   * beyond a fresh key's allowance: units the state no longer counts are not refunded twice.
   * With `at` (a receipt: the instant the check was decided), only units that check took and
   * the algorithm still counts come back, never another request's. Without it, up to `cost` of
   * the units the key holds now come back, newest first (it cannot tell whose they are).
   * Leases (the concurrency spec) are not units: a refund leaves them (see `release`).
   */
  refund(state: S, now: number, cost: number, at?: number): void;
  /**
   * Takes `cost` units at `now` whether or not they fit (a penalty): the state then counts them
   * past the limit, and recovers exactly as it would from units it had taken. Never used by checks.
   */
  force?(state: S, now: number, cost: number): void;
  /**
   * Leases (the concurrency spec only): gives back `cost` leases acquired (or last renewed) at
   * exactly `at`, in place, while they still count; a lease already expired or released frees
   * nothing. Rate algorithms have none: a release leaves them untouched.
   */
  release?(state: S, now: number, cost: number, at: number): void;
  /**
   * Leases (the concurrency spec only): whether `cost` leases acquired (or last renewed) at `at`
   * are still held at `now`. When they are: allowed, and with `commit` they move to `now` (their
   * expiry starts again; `now` is their new receipt). When they are not (expired, released):
   * denied with `retryAfterMs` Infinity (that renewal can never pass), and nothing changes.
   */
  renew?(state: S, now: number, cost: number, at: number, commit: boolean): Decision;
  /** The instant from which `state` behaves exactly like `create()` (so it may be dropped). */
  freshAt(state: S): number;
  /**
   * What the state means: the algorithm and the parameters that give stored figures their sense
   * or decide when they stop mattering (a window length; a token bucket's capacity and rate,
   * which set its expiry). State carries over to a new spec only when the shapes are equal: a
   * window's new limit, or a GCRA's new limit, period or burst, keeps it; anything else starts
   * fresh, identically on every store.
   */
  readonly shape: string;
  /** How a state is summarised once it leaves the exact table under `maxKeys`. */
  readonly summary: Summary<S>;
}

/**
 * A conservative, fixed-size summary of states: a few float64 slots per cell (NaN: empty). A
 * cell stands for every state joined into it and never admits a request any of them would
 * deny, so a key read back from a summary can only be over-counted, never reset.
 */
export interface Summary<S> {
  /** Float64 slots one cell takes. */
  readonly slots: number;
  /** Joins `state` into the cell at `at`: the cell then dominates both (it admits less). */
  join(cells: Float64Array, at: number, state: S): void;
  /** A state equivalent to the cell at `at`, or undefined when the cell is empty. */
  read(cells: Float64Array, at: number): S | undefined;
}

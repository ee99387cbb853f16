/**
 * The store contract. A store keeps per-key state and runs a rule's algorithm steps on it
 * atomically; limiters bind each rule once and then call the bound rule per request.
 */
import type { Algorithm } from "./algorithms/algorithm.ts";
import type { Clock } from "./clock.ts";
import type { Decision } from "./algorithms/decision.ts";

/** A rule as a store sees it: a namespace and the steps of its members (one, or a composite). */
export interface RuleBinding {
  /** Unique within the store for this rule (and tier); keeps rules' keys apart. */
  readonly id: string;
  /** The members' steps, in spec order; a request passes only if every member allows it. */
  readonly algorithms: readonly Algorithm[];
  /**
   * The clock the limiter reads `now` from (undefined: the store's own time). Stores that act on
   * several rules at once (sweeps, eviction) only compare instants read from the same clock.
   */
  readonly clock?: Clock | undefined;
}

/** One rule bound to a store. */
export interface BoundRule {
  /**
   * Decides `cost` units for `key` at `now` (all members read the same `now`). When `now` is
   * undefined the store uses its own time source (the system clock, or Redis `TIME`).
   * A peek, or a request any member denies, changes nothing.
   */
  check(key: string, cost: number, now: number | undefined, peek: boolean): Decision | Promise<Decision>;
  /** Forgets `key`'s state in every member. */
  reset(key: string): void | Promise<void>;
  /** Tells the store this binding is no longer used (state shared with a newer binding stays). */
  release(): void;
}

/** A place where rate-limit state lives. `MemoryStore` is synchronous; `RedisStore` returns promises. */
export interface Store {
  /** Prepares `rule` for checks; called once per limiter (and once per tier of a service rule). */
  bind(rule: RuleBinding): BoundRule;
  /** True when `check` returns plain values, never promises. */
  readonly synchronous: boolean;
}

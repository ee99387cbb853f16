/**
 * The store contract. A store keeps one record per (rule, key) and runs `decideRule` on it
 * atomically; limiters bind each rule once and then call the bound rule per request.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { Clock } from "./clock.ts";
import type { Operation } from "./decide-rule.ts";
import type { RuleIdentity } from "./identity.ts";
import type { CompiledRule } from "./rule.ts";

/** A rule as a store sees it: a namespace and the compiled rule (decided by `decideRule`). */
export interface RuleBinding {
  /**
   * The rule's identity within the store (a limiter's name, a service rule and tier, or a
   * digest of the spec); with the rule's shape it keeps rules' records apart.
   */
  readonly id: string;
  /**
   * The same identity as a structured value (`id` is `identityText(identity)`); absent when the
   * binding arrived as text over a wire (the cluster store's host).
   */
  readonly identity?: RuleIdentity | undefined;
  /** The members, the ban and the record layout; stores run `decideRule` on it. */
  readonly rule: CompiledRule;
  /**
   * The clock the limiter reads `now` from (undefined: the store's own time). Stores that act on
   * several rules at once (sweeps, eviction) only compare instants read from the same clock.
   */
  readonly clock?: Clock | undefined;
}

/** One rule bound to a store. */
export interface BoundRule {
  /**
   * Runs `op` for `cost` units of `key` at `now` (all members read the same `now`), atomically,
   * through `decideRule`. When `now` is undefined the store uses its own time source (the
   * system clock, or Redis `TIME`). A peek, or a request any member denies, changes nothing
   * (except a denial counted toward a ban). For a refund, `at` is its receipt: the instant the
   * refunded check was decided (see `Algorithm.refund`).
   */
  check(key: string, cost: number, now: number | undefined, op: Operation, at?: number): Decision | Promise<Decision>;
  /**
   * `check(key, 1, now, "check")` exactly (the same record read and written, the same answer),
   * where a synchronous store has a shorter path for it (MemoryStore's, SharedMemoryStore's).
   * Optional: the limiter's fast lane for `tryAcquire(key)` of a plain rule (no hook, no parts,
   * no leases) calls it whenever the bound rule offers it, whatever the store.
   */
  readonly checkOne?: (key: string, now: number) => Decision;
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
  /**
   * True when the store decides rate-limiter-flexible's calls (`penalty`, `block`, `get`);
   * limiters refuse them with a StoreError on other stores.
   */
  readonly flexibleCalls?: boolean;
  /**
   * True when a check without `now` is decided on the store's own clock (Redis `TIME`) and the
   * store stamps that reading as the decision's `at` for rules with a concurrency member (a
   * lease's receipt). Limiters give other stores `now` themselves for such rules.
   */
  readonly stampsLeases?: boolean;
}

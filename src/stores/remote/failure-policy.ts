/**
 * What a remote store (Redis, the cluster store, the service client) answers for a call it
 * could not make: its server failed, did not answer in time, or the circuit is open
 * (`onError`). Every decision made this way carries `failure: { policy, error }`, so logs,
 * metrics and HTTP middleware (503 under "deny") can tell it from a real limit.
 *
 * A fallback always decides through the store contract: a `{ fallback: Store }` is bound to the
 * rule's RuleBinding and asked with the same `now` (undefined under Redis TIME: the fallback
 * then reads its own clock), so it decides the same rule on the same time line. A `Limiter`
 * (or a function building one per rule), accepted as SPEC §8 names it, is adapted into a
 * bound rule that asks that limiter (which keeps its own spec and clock: the way to enforce an
 * instance's share of a limit). The limiter is described by shape (FallbackLimiter), so no
 * store depends on the limiter module above it.
 *
 * A lease the fallback grants (a rule with a concurrency member) is the fallback's: the
 * decision's `release()` / `renew()` act there, not on the remote store (which never saw it, and
 * may be back by then), so an outage cannot leak the fallback's slots.
 */
import { type Decision, decision, stampAt } from "../../algorithms/decision.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { markFreshAnswer, type Operation } from "../../core/decide-rule.ts";
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError, type StoreError } from "../../core/errors.ts";
import { attachLease } from "../../core/hold-lease.ts";
import { compileRule } from "../../core/rule.ts";
import { checkInstances, shareOf } from "../../core/share.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";

/** A fixed policy: `"deny"` (the default), `"allow"` or `"throw"`. */
export type FixedPolicy = "deny" | "allow" | "throw";

/**
 * The fixed policies, in the order they are documented (`--on-store-error` takes these). Built
 * from a record over FixedPolicy, so the type and the list cannot disagree.
 */
export const FIXED_POLICIES: readonly FixedPolicy[] = Object.keys({
  deny: true,
  allow: true,
  throw: true,
} satisfies Record<FixedPolicy, true>) as FixedPolicy[];

/** The policy when none is given: a store that cannot answer must not wave everything through. */
export const DEFAULT_POLICY: FixedPolicy = "deny";

/** True when `value` is one of {@link FIXED_POLICIES}. */
export function isFixedPolicy(value: unknown): value is FixedPolicy {
  return (FIXED_POLICIES as readonly unknown[]).includes(value);
}

/** `onError: { fallback }`: a store (typically a `MemoryStore`) that decides while the remote one cannot. */
export interface FallbackOption {
  /** Bound to each rule on its first failure; asked with the same key, cost and `now`. */
  fallback: Store;
  /**
   * How many processes share the limit: the fallback then enforces this process's share
   * (`shareOf(spec, instances)`: counts divided, rounded down, at least 1; rates divided), so
   * the fleet together stays within the limit while the remote store is down. Default 1: the
   * whole limit in every process.
   */
  instances?: number;
}

/** What a fallback limiter must offer: a sluice `Limiter` fits (described by shape, see above). */
export interface FallbackLimiter {
  /** Takes `cost` units for `key` if allowed. */
  tryAcquire(key: string, cost?: number): Decision | Promise<Decision>;
  /** What tryAcquire would say; changes nothing. */
  peek(key: string, cost?: number): Decision | Promise<Decision>;
  /** Gives units back. */
  refund(key: string, cost?: number): Decision | Promise<Decision>;
  /** Takes units whether or not they fit. */
  penalty(key: string, cost?: number): Decision | Promise<Decision>;
  /** Refuses `key` for `ms`. */
  block(key: string, ms: number): Decision | Promise<Decision>;
  /** The key's state, or null for a fresh key. */
  get(key: string): Decision | null | Promise<Decision | null>;
  /** Forgets `key`. */
  reset(key: string): void | Promise<void>;
}

/**
 * `"deny"` (default): deny with a short `retryAfterMs`; `"allow"`: let the request through;
 * `"throw"`: reject with the `StoreError`; `{ fallback: Store }`: that store decides the same
 * rule at the same `now`; a `Limiter`: ask it instead (typically an in-process limiter
 * enforcing this instance's share of the limit); a function: builds that fallback limiter per
 * rule (called once per rule, on its first failure), for services with many rules. `R` is
 * what names a rule: its RuleBinding in a store, its name in the service client.
 */
export type OnError<R = RuleBinding> = FixedPolicy | FallbackOption | FallbackLimiter | ((rule: R) => FallbackLimiter);

/** `retryAfterMs` (and `resetMs`) of a decision made under `"deny"`: come back soon, the server may be back. */
export const DENY_RETRY_MS = 1000;

function isStore(value: unknown): value is Store {
  return typeof value === "object" && value !== null && typeof (value as Store).bind === "function";
}

function isLimiter(value: unknown): value is FallbackLimiter {
  return typeof value === "object" && value !== null && typeof (value as FallbackLimiter).tryAcquire === "function";
}

/**
 * Checks `onError`, throwing ArgumentError naming the value received. `storeFallback: false`
 * refuses `{ fallback: Store }` (the service client cannot bind a store: the service holds the rules).
 */
export function checkOnError<R>(onError: unknown, storeFallback = true): OnError<R> {
  if (isFixedPolicy(onError) || typeof onError === "function" || isLimiter(onError)) return onError as OnError<R>;
  if (storeFallback && typeof onError === "object" && onError !== null && "fallback" in onError) {
    for (const key of Object.keys(onError)) {
      if (key !== "fallback" && key !== "instances") {
        throw new ArgumentError(`unknown \`onError\` option \`${key}\` (expected fallback, instances)`);
      }
    }
    const { fallback, instances } = onError as { fallback: unknown; instances?: unknown };
    if (instances !== undefined) checkInstances(instances, "onError.instances");
    if (!isStore(fallback)) {
      throw new ArgumentError(`\`onError.fallback\` must be a Store such as a MemoryStore (got ${String(fallback)})`);
    }
    return onError as FallbackOption;
  }
  const forms = storeFallback
    ? `{ fallback: Store }, a Limiter or a function returning one`
    : "a Limiter or a function of the rule name returning one";
  throw new ArgumentError(`\`onError\` must be "deny", "allow", "throw", ${forms} (got ${describeValue(onError)})`);
}

/** The policy in words, for the first-failure warning. */
export function describePolicy(onError: OnError<never>): string {
  if (onError === "deny") return `onError "deny" (denied with retryAfterMs ${DENY_RETRY_MS}, \`decision.failure\` set)`;
  if (onError === "allow") return `onError "allow" (allowed, \`decision.failure\` set)`;
  if (onError === "throw") return `onError "throw" (each check rejects with a StoreError)`;
  if (typeof onError === "function")
    return "onError: the fallback limiter its function builds per rule (`decision.failure` set)";
  if ("fallback" in onError) {
    const share =
      onError.instances === undefined || onError.instances === 1 ? "" : `, this process's 1/${onError.instances} share`;
    return `onError: { fallback } (the fallback store decides${share}, \`decision.failure\` set)`;
  }
  return "onError: the fallback limiter given (`decision.failure` set)";
}

/**
 * The answer of a fixed policy for a rule reporting `limit`: "deny" refuses with a short retry
 * (the server may be back soon), "allow" passes with no made-up figures beyond `limit − cost`.
 */
export function fixedAnswer(policy: "deny" | "allow", limit: number, cost: number, error: StoreError): Decision {
  if (policy === "deny") {
    return { ...decision(false, limit, 0, DENY_RETRY_MS, DENY_RETRY_MS), failure: { policy, error } };
  }
  return { ...decision(true, limit, Math.max(0, limit - cost), 0, 0), failure: { policy, error } };
}

/**
 * A bound rule whose calls a limiter decides (for `onError: Limiter`); `now` is the limiter's own.
 * Its allowed checks keep the limiter's own lease handles (a leased limiter gives them).
 */
function limiterRule(limiter: FallbackLimiter): BoundRule {
  return {
    check: async (key, cost, _now, op) => {
      if (op === "peek") return limiter.peek(key, cost);
      if (op === "refund") return limiter.refund(key, cost);
      if (op === "penalty") return limiter.penalty(key, cost);
      if (op === "block") return limiter.block(key, cost);
      // A fresh key's get travels as a marked peek (the calling limiter answers null).
      if (op === "get") return (await limiter.get(key)) ?? markFreshAnswer(await limiter.peek(key));
      // The fallback holds none of the store's leases: it reports how the key stands there.
      if (op === "release" || op === "renew") return limiter.peek(key, 1);
      return limiter.tryAcquire(key, cost);
    },
    reset: async (key) => {
      await limiter.reset(key);
    },
    release: () => {},
  };
}

/**
 * The decision for one call a store could not make: the call as it was asked (`now` the caller's
 * instant, `at` its receipt) and the error that stopped it. One shape for the policy and for
 * every bound rule that hands a failed call to it.
 */
export type DecideFailed = (
  key: string,
  cost: number,
  now: number | undefined,
  op: Operation,
  error: StoreError,
  at?: number,
) => Promise<Decision>;

/** The policy bound to one rule. */
export interface FailurePolicy {
  /**
   * The decision for a call the server could not make (or the rejection under "throw"). `at` is
   * the call's receipt (a refund's or a lease's), handed to a fallback store so that a release
   * during an outage frees only what that receipt names there (nothing, for a lease the server granted).
   */
  readonly decide: DecideFailed;
  /** Forgets `key` in the fallback too (a reset must not leave it limited there). */
  forget(key: string): Promise<void>;
  /** Releases the fallback's binding, if one was made. */
  release(): void;
}

/** How one rule meets its policy. */
export interface PolicyTarget<R> {
  /** What names the rule to a fallback factory (`onError` as a function). */
  readonly rule: R;
  /** The limit a fixed answer reports (read at each failure: the client learns it from answers). */
  limit(): number;
  /** Binds a `{ fallback }` store to this rule, or to its share of `instances` (stores only; the client refuses that form). */
  bind?(store: Store, instances: number): BoundRule;
  /** Hears every failure before the policy answers (the once-only warning). */
  onFailure?(error: StoreError): void;
  /**
   * For a rule with a concurrency member bound to a store: the clock its fallback store's leases
   * are timed by (the limiter's, else the system clock), so their handles can act there.
   */
  readonly leases?: Clock;
}

/**
 * `d` with `failure` set, keeping what is not enumerated: its receipt `at` and its lease handles
 * (a fallback limiter's own), which a spread would drop.
 */
function withFailure(d: Decision, failure: NonNullable<Decision["failure"]>): Decision {
  const out: Decision = { ...d, failure };
  for (const name of ["at", "release", "renew"] as const) {
    const value = d[name];
    if (value !== undefined) Object.defineProperty(out, name, { value, writable: true, configurable: true });
  }
  return out;
}

/**
 * Applies `onError` for one rule. The fallback is bound on first use, except a single limiter
 * shared by every rule, which costs nothing to adapt: a reset forgets the key there whether or
 * not this rule has failed yet (another rule's failure may have counted it).
 */
export function failurePolicy<R>(onError: OnError<R>, target: PolicyTarget<R>): FailurePolicy {
  let bound: BoundRule | undefined = isLimiter(onError) ? limiterRule(onError) : undefined;
  const fallback = (): BoundRule => {
    if (bound !== undefined) return bound;
    if (typeof onError === "function") bound = limiterRule(onError(target.rule));
    else if (target.bind !== undefined) {
      const { fallback: store, instances = 1 } = onError as FallbackOption;
      bound = target.bind(store, instances);
    } else throw new ArgumentError("`onError: { fallback }` needs a store that can bind a rule");
    return bound;
  };
  return {
    async decide(key, cost, now, op, error, at) {
      target.onFailure?.(error);
      if (onError === "throw") throw error;
      if (onError === "deny" || onError === "allow") return fixedAnswer(onError, target.limit(), cost, error);
      const failure = { policy: "fallback" as const, error };
      const bound = fallback();
      if (op !== "check" || target.leases === undefined || isLimiter(onError) || typeof onError === "function") {
        return withFailure(await bound.check(key, cost, now, op, at), failure);
      }
      // A fallback store granting a lease: decided at a known instant (its receipt), released there.
      const clock = target.leases;
      const t = now ?? clock.now();
      const d = withFailure(await bound.check(key, cost, t, op), failure);
      if (!d.allowed) return d;
      const mark = (r: Decision) => withFailure(r, failure);
      return attachLease(
        stampAt(d, t),
        t,
        async (call, at) => {
          const r = mark(await bound.check(key, cost, clock.now(), call, at));
          return call === "renew" && r.allowed ? stampAt(r, clock.now()) : r;
        },
        async () => mark(await bound.check(key, 1, clock.now(), "peek")),
      );
    },
    async forget(key) {
      if (bound !== undefined) await bound.reset(key);
    },
    release() {
      bound?.release();
    },
  };
}

/** The policy of a rule bound to a store: fixed answers report its smallest member limit. */
export function rulePolicy(
  onError: OnError,
  rule: RuleBinding,
  onFailure: (error: StoreError) => void = () => undefined,
): FailurePolicy {
  const limit = Math.min(...rule.rule.members.map((a) => a.limit));
  const bind = (store: Store, instances: number) => store.bind(instances === 1 ? rule : shareBinding(rule, instances));
  const leased = rule.rule.members.some((m) => m.renew !== undefined);
  const leases = leased ? (rule.clock ?? systemClock) : undefined;
  return failurePolicy(onError, { rule, limit: () => limit, bind, onFailure, ...(leases ? { leases } : {}) });
}

/** `rule` limited to one of `instances` processes' share, under an id of its own. */
function shareBinding(rule: RuleBinding, instances: number): RuleBinding {
  const members = rule.rule.members.map((member) => shareOf(member.spec, instances));
  return { ...rule, id: `${rule.id}|share/${instances}`, rule: compileRule(members, rule.rule.ban) };
}

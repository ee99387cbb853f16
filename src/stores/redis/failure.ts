/**
 * What a check answers when Redis fails or does not answer in time (`onError`). Every decision
 * made this way carries `failure: { policy, error }`, so logs, metrics and HTTP middleware (503
 * under "deny") can tell it from a real limit.
 *
 * A fallback is always a Store bound to the same RuleBinding as the Redis rule and asked with
 * the same `now` (undefined under Redis TIME: the fallback store then reads its own clock), so
 * it decides the same rule on the same time line. A `Limiter` given for compatibility is
 * wrapped into a Store whose bound rule asks that limiter (which keeps its own spec and clock:
 * the way to enforce an instance's share of a limit).
 */
import { type Decision, decision } from "../../algorithms/decision.ts";
import { markFreshAnswer, type Operation } from "../../core/decide-rule.ts";
import { ArgumentError, type StoreError } from "../../core/errors.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import type { Limiter } from "../../limiter.ts";

/** `onError: { fallback }`: a store (typically a `MemoryStore`) that decides while Redis cannot. */
export interface FallbackOption {
  /** Bound to each rule on its first failure; asked with the same key, cost and `now`. */
  fallback: Store;
}

/**
 * `"deny"` (default): deny with a short `retryAfterMs`; `"allow"`: let the request through;
 * `"throw"`: reject with the `StoreError`; `{ fallback: Store }`: that store decides the same
 * rule at the same `now`; a `Limiter`: ask it instead (typically an in-process limiter
 * enforcing this instance's share of the limit); a function: builds that fallback limiter per
 * rule (called once per bound rule, on its first failure), for services with many rules.
 */
export type OnError = "deny" | "allow" | "throw" | FallbackOption | Limiter | ((rule: RuleBinding) => Limiter);

/** `retryAfterMs` (and `resetMs`) of a decision made under `"deny"`: come back soon, Redis may be back. */
export const DENY_RETRY_MS = 1000;

function isStore(value: unknown): value is Store {
  return typeof value === "object" && value !== null && typeof (value as Store).bind === "function";
}

/** Checks `onError`, throwing ArgumentError naming the value received. */
export function checkOnError(onError: unknown): OnError {
  if (onError === "deny" || onError === "allow" || onError === "throw" || typeof onError === "function") {
    return onError as OnError;
  }
  if (typeof onError === "object" && onError !== null && typeof (onError as Limiter).tryAcquire === "function") {
    return onError as Limiter;
  }
  if (typeof onError === "object" && onError !== null && "fallback" in onError) {
    for (const key of Object.keys(onError)) {
      if (key !== "fallback") throw new ArgumentError(`unknown \`onError\` option \`${key}\` (expected fallback)`);
    }
    const { fallback } = onError as { fallback: unknown };
    if (!isStore(fallback)) {
      throw new ArgumentError(`\`onError.fallback\` must be a Store such as a MemoryStore (got ${String(fallback)})`);
    }
    return onError as FallbackOption;
  }
  throw new ArgumentError(
    `\`onError\` must be "deny", "allow", "throw", { fallback: Store }, a Limiter or a function returning one (got ${
      typeof onError === "string" ? JSON.stringify(onError) : String(onError)
    })`,
  );
}

/** A Store whose rules are decided by a limiter (for `onError: Limiter`); `now` is the limiter's own. */
function limiterStore(limiterFor: (rule: RuleBinding) => Limiter): Store {
  return {
    synchronous: false,
    flexibleCalls: true,
    bind(rule: RuleBinding): BoundRule {
      const limiter = limiterFor(rule);
      return {
        check: async (key, cost, _now, op) => {
          if (op === "peek") return limiter.peek(key, cost);
          if (op === "refund") return limiter.refund(key, cost);
          if (op === "penalty") return limiter.penalty(key, cost);
          if (op === "block") return limiter.block(key, cost);
          // A fresh key's get travels as a marked peek (the calling limiter answers null).
          if (op === "get") return (await limiter.get(key)) ?? markFreshAnswer(await limiter.peek(key));
          return limiter.tryAcquire(key, cost);
        },
        reset: async (key) => {
          await limiter.reset(key);
        },
        release: () => {},
      };
    },
  };
}

/** The fallback store `onError` names, or undefined for the three fixed policies. */
function fallbackStore(onError: OnError): Store | undefined {
  if (typeof onError === "string") return undefined;
  if (typeof onError === "function") return limiterStore(onError);
  if ("fallback" in onError) return onError.fallback;
  return limiterStore(() => onError);
}

/**
 * The answer of a fixed policy for a rule reporting `limit`: "deny" refuses with a short retry
 * (Redis may be back soon), "allow" passes with no made-up figures beyond `limit − cost`.
 * Shared by every remote store (Redis, the cluster store, the service client).
 */
export function fixedAnswer(policy: "deny" | "allow", limit: number, cost: number, error: StoreError): Decision {
  if (policy === "deny") {
    return { ...decision(false, limit, 0, DENY_RETRY_MS, DENY_RETRY_MS), failure: { policy, error } };
  }
  return { ...decision(true, limit, Math.max(0, limit - cost), 0, 0), failure: { policy, error } };
}

/** The policy bound to one rule. */
export interface FailurePolicy {
  /** The decision for a check that Redis could not make (or the rejection under "throw"). */
  decide(key: string, cost: number, now: number | undefined, op: Operation, error: StoreError): Promise<Decision>;
  /** Forgets `key` in the fallback too (a reset must not leave it limited there). */
  forget(key: string): Promise<void>;
  /** Releases the fallback's binding, if one was made. */
  release(): void;
}

/** The policy in words, for the first-failure warning. */
export function describePolicy(onError: OnError): string {
  if (onError === "deny") return `onError "deny" (denied with retryAfterMs ${DENY_RETRY_MS}, \`decision.failure\` set)`;
  if (onError === "allow") return `onError "allow" (allowed, \`decision.failure\` set)`;
  if (onError === "throw") return `onError "throw" (each check rejects with a StoreError)`;
  if (typeof onError === "function")
    return "onError: the fallback limiter its function builds per rule (`decision.failure` set)";
  if ("fallback" in onError) return "onError: { fallback } (the fallback store decides, `decision.failure` set)";
  return "onError: the fallback limiter given (`decision.failure` set)";
}

/**
 * Applies the policy for one rule; the fallback store (if any) is bound on first use.
 * `onFailure` hears every failure before the policy answers (the store's warning).
 */
export function failurePolicy(
  onError: OnError,
  rule: RuleBinding,
  onFailure: (error: StoreError) => void = () => undefined,
): FailurePolicy {
  const limit = Math.min(...rule.rule.members.map((a) => a.limit));
  const store = fallbackStore(onError);
  let bound: BoundRule | undefined;
  const forget = async (key: string) => {
    if (bound !== undefined) await bound.reset(key);
  };
  const decide = async (
    key: string,
    cost: number,
    now: number | undefined,
    op: Operation,
    error: StoreError,
  ): Promise<Decision> => {
    onFailure(error);
    if (onError === "throw") throw error;
    if (onError === "deny" || onError === "allow" || store === undefined) {
      return fixedAnswer(onError === "deny" ? "deny" : "allow", limit, cost, error);
    }
    bound ??= store.bind(rule);
    const d = await bound.check(key, cost, now, op);
    return { ...d, failure: { policy: "fallback", error } };
  };
  const release = () => bound?.release();
  return { decide, forget, release };
}

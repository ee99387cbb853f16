/**
 * What a check answers when Redis fails or does not answer in time (`onError`). Every decision
 * made this way carries `failure: { policy, error }`, so logs, metrics and HTTP middleware (503
 * under "deny") can tell it from a real limit.
 */
import { type Decision, decision } from "../../algorithms/decision.ts";
import { ArgumentError, type StoreError } from "../../errors.ts";
import type { Limiter } from "../../limiter.ts";
import type { RuleBinding } from "../../store.ts";

/**
 * `"deny"` (default): deny with a short `retryAfterMs`; `"allow"`: let the request through;
 * `"throw"`: reject with the `StoreError`; a `Limiter`: ask it instead (typically an in-process
 * limiter enforcing this instance's share of the limit); a function: builds that fallback
 * limiter per rule (called once per bound rule, on its first failure), for services with many rules.
 */
export type OnError = "deny" | "allow" | "throw" | Limiter | ((rule: RuleBinding) => Limiter);

/** `retryAfterMs` (and `resetMs`) of a decision made under `"deny"`: come back soon, Redis may be back. */
export const DENY_RETRY_MS = 1000;

/** Checks `onError`, throwing ArgumentError naming the value received. */
export function checkOnError(onError: unknown): OnError {
  if (onError === "deny" || onError === "allow" || onError === "throw" || typeof onError === "function") {
    return onError as OnError;
  }
  if (typeof onError === "object" && onError !== null && typeof (onError as Limiter).tryAcquire === "function") {
    return onError as Limiter;
  }
  throw new ArgumentError(
    `\`onError\` must be "deny", "allow", "throw", a Limiter or a function returning one (got ${
      typeof onError === "string" ? JSON.stringify(onError) : String(onError)
    })`,
  );
}

/** The policy bound to one rule. */
export interface FailurePolicy {
  /** The decision for a check that Redis could not make (or the rejection under "throw"). */
  decide(key: string, cost: number, peek: boolean, error: StoreError): Promise<Decision>;
  /** Forgets `key` in the fallback limiter too (a reset must not leave it limited there). */
  forget(key: string): Promise<void>;
}

/** Applies the policy for one rule; the fallback limiter (if any) is built on first use. */
export function failurePolicy(onError: OnError, rule: RuleBinding): FailurePolicy {
  const limit = Math.min(...rule.rule.members.map((a) => a.limit));
  let fallback: Limiter | undefined = typeof onError === "object" ? onError : undefined;
  const forget = async (key: string) => {
    if (fallback !== undefined) await fallback.reset(key);
  };
  const decide = async (key: string, cost: number, peek: boolean, error: StoreError): Promise<Decision> => {
    if (onError === "throw") throw error;
    if (onError === "deny") {
      return { ...decision(false, limit, 0, DENY_RETRY_MS, DENY_RETRY_MS), failure: { policy: "deny", error } };
    }
    if (onError === "allow") {
      return { ...decision(true, limit, Math.max(0, limit - cost), 0, 0), failure: { policy: "allow", error } };
    }
    fallback ??= typeof onError === "function" ? onError(rule) : onError;
    const d = await (peek ? fallback.peek(key, cost) : fallback.tryAcquire(key, cost));
    return { ...d, failure: { policy: "fallback", error } };
  };
  return { decide, forget };
}

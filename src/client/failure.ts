/**
 * The failure policies of RedisStore, for calls the service could not answer: the same
 * answers and the same `failure` on the Decision, so code written for one works on the other.
 * The service holds the rules, so under "deny"/"allow" the `limit` is the last one the service
 * reported for that rule (0 before any answer).
 */
import type { Decision } from "../algorithms/decision.ts";
import type { StoreError } from "../core/errors.ts";
import type { Limiter } from "../limiter.ts";
import { firstFailureWarning } from "../stores/failure-warning.ts";
import { describePolicy, fixedAnswer, type OnError } from "../stores/redis/failure.ts";
import type { ClientOnError } from "./options.ts";

/** What kind of call failed. */
export type Op = "check" | "peek";

/** Answers failed calls by the policy; remembers each rule's limit and fallback limiter. */
export class ClientFailurePolicy {
  readonly #onError: ClientOnError;
  readonly #limits = new Map<string, number>();
  readonly #fallbacks = new Map<string, Limiter>();

  readonly #warn: (error: StoreError) => void;

  constructor(onError: ClientOnError, service: string) {
    this.#onError = onError;
    this.#warn = firstFailureWarning(`sluice client (${service})`, describePolicy(onError as OnError));
  }

  /** Notes the limit the service reported for `rule`. */
  learn(rule: string, d: Decision): void {
    this.#limits.set(rule, d.limit);
  }

  #fallback(rule: string): Limiter | undefined {
    const onError = this.#onError;
    if (typeof onError === "object") return onError;
    if (typeof onError !== "function") return undefined;
    let limiter = this.#fallbacks.get(rule);
    if (limiter === undefined) {
      limiter = onError(rule);
      this.#fallbacks.set(rule, limiter);
    }
    return limiter;
  }

  /** The decision for a call the service could not make (rejects with `error` under "throw"). */
  async decide(rule: string, key: string, cost: number, op: Op, error: StoreError): Promise<Decision> {
    const onError = this.#onError;
    this.#warn(error);
    if (onError === "throw") throw error;
    const limit = this.#limits.get(rule) ?? 0;
    if (onError === "deny" || onError === "allow") return fixedAnswer(onError, limit, cost, error);
    const fallback = this.#fallback(rule) as Limiter;
    const d = await (op === "peek" ? fallback.peek(key, cost) : fallback.tryAcquire(key, cost));
    return { ...d, failure: { policy: "fallback", error } };
  }

  /** Forgets `key` in the fallback limiter too, so a reset does not leave it limited there. */
  async forget(rule: string, key: string): Promise<void> {
    const onError = this.#onError;
    // A per-rule factory is only asked once that rule has failed: no limiter, nothing to forget.
    const fallback = typeof onError === "object" ? onError : this.#fallbacks.get(rule);
    if (fallback !== undefined) await fallback.reset(key);
  }
}

/**
 * The service client's side of the one failure policy (../stores/remote/failure-policy.ts):
 * the same answers and the same `failure` on the Decision as RedisStore, so code written for
 * one works on the other. The service holds the rules, so rules are named by their name here:
 * a fallback factory is called with it, and under "deny"/"allow" the `limit` is the last one
 * the service reported for that rule (0 before any answer).
 */
import type { Decision } from "../algorithms/decision.ts";
import type { StoreError } from "../core/errors.ts";
import { describePolicy, type FailurePolicy, failurePolicy } from "../stores/remote/failure-policy.ts";
import { firstFailureWarning } from "../stores/remote/failure-warning.ts";
import type { ClientOnError } from "./options.ts";

/** What kind of call failed. */
export type Op = "check" | "peek";

/** Answers failed calls by the policy, one policy per rule name; remembers each rule's limit. */
export class ClientFailurePolicy {
  readonly #onError: ClientOnError;
  readonly #limits = new Map<string, number>();
  readonly #rules = new Map<string, FailurePolicy>();
  readonly #warn: (error: StoreError) => void;

  constructor(onError: ClientOnError, service: string) {
    this.#onError = onError;
    this.#warn = firstFailureWarning(`sluice client (${service})`, describePolicy(onError));
  }

  /** Notes the limit the service reported for `rule`. */
  learn(rule: string, d: Decision): void {
    this.#limits.set(rule, d.limit);
  }

  #policy(rule: string): FailurePolicy {
    let policy = this.#rules.get(rule);
    if (policy === undefined) {
      policy = failurePolicy(this.#onError, {
        rule,
        limit: () => this.#limits.get(rule) ?? 0,
        onFailure: this.#warn,
      });
      this.#rules.set(rule, policy);
    }
    return policy;
  }

  /** The decision for a call the service could not make (rejects with `error` under "throw"). */
  decide(rule: string, key: string, cost: number, op: Op, error: StoreError): Promise<Decision> {
    return this.#policy(rule).decide(key, cost, undefined, op, error);
  }

  /** Forgets `key` in the fallback limiter too, so a reset does not leave it limited there. */
  forget(rule: string, key: string): Promise<void> {
    return this.#policy(rule).forget(key);
  }
}

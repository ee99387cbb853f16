/**
 * One answer per decision: what every HTTP door (the middleware adapters through the Engine,
 * `sluice serve`'s forward-auth and JSON API) answers a Decision with — its outcome, status,
 * `Retry-After` and problem body. A ban is answered alike everywhere ({@link ANSWER_STATUS}),
 * and a store failure is a 503 that says when to retry, never a 429 that blames the client.
 */
import type { Decision } from "../algorithms/decision.ts";
import { retryAfterSeconds } from "./headers.ts";
import type { Policy } from "./policy.ts";
import { banned, type ProblemDetails, quotaExceeded, storeUnavailable } from "./problem.ts";

/**
 * What a decision means for the request: admitted, limited (over its quota), banned (escalated
 * after repeated denials), or `failure` (the store failed; the policy answered, not the limit).
 */
export type Outcome = "allowed" | "limited" | "banned" | "failure";

/**
 * The statuses of the refusing outcomes: the one place they are set. `limited` may be changed
 * per answer (forward-auth's `deny=` for proxies that pass on only 401/403); the others not.
 */
export const ANSWER_STATUS = { limited: 429, banned: 403, failure: 503 } as const;

/** `Retry-After` of a store-failure 503, in seconds: a store comes back (or its breaker half-opens) in about that. */
export const STORE_FAILURE_RETRY_AFTER_SECONDS = 1;

/** The outcome of `decision`. A failure answered "allow" is `failure` too: it was not decided. */
export function outcomeOf(decision: Decision): Outcome {
  const failure = decision.failure;
  if (failure !== undefined && failure.policy !== "fallback") return "failure";
  if (decision.allowed) return "allowed";
  return decision.banned === true ? "banned" : "limited";
}

/** The status of `decision`'s answer (200 when the request goes on). */
export function statusOf(decision: Decision, limitedStatus: number = ANSWER_STATUS.limited): number {
  if (decision.allowed) return 200;
  const outcome = outcomeOf(decision);
  return outcome === "limited" ? limitedStatus : ANSWER_STATUS[outcome as "banned" | "failure"];
}

/** `Retry-After` of a refused `decision` in whole seconds (undefined when admitted, or never passing). */
export function retryAfterOf(decision: Decision): string | undefined {
  if (decision.allowed) return undefined;
  return outcomeOf(decision) === "failure" ? String(STORE_FAILURE_RETRY_AFTER_SECONDS) : retryAfterSeconds(decision);
}

/** How a door answers one decision. */
export interface Answer {
  outcome: Outcome;
  /** 200 when the request goes on (a failure under "allow" included). */
  status: number;
  /** `Retry-After` in whole seconds, or undefined (admitted, or a cost that can never pass). */
  retryAfter: string | undefined;
  /** The problem body of a refusal. */
  problem: ProblemDetails | undefined;
}

/** Answers `decision`; `policies` name what a 429 violated; `limitedStatus` replaces 429. */
export function answerOf(
  decision: Decision,
  policies: readonly Policy[],
  limitedStatus: number = ANSWER_STATUS.limited,
): Answer {
  const outcome = outcomeOf(decision);
  const status = statusOf(decision, limitedStatus);
  const retryAfter = retryAfterOf(decision);
  if (decision.allowed) return { outcome, status, retryAfter, problem: undefined };
  return { outcome, status, retryAfter, problem: problemOf(decision, policies, limitedStatus) };
}

/** The problem body of a refused `decision`. */
export function problemOf(
  decision: Decision,
  policies: readonly Policy[],
  limitedStatus: number = ANSWER_STATUS.limited,
): ProblemDetails {
  switch (outcomeOf(decision)) {
    case "failure": {
      const code = (decision.failure?.error as { code?: unknown } | undefined)?.code;
      return storeUnavailable(typeof code === "string" ? code : undefined);
    }
    case "banned":
      return banned(decision, ANSWER_STATUS.banned);
    default:
      return { ...quotaExceeded(decision, policies), status: limitedStatus };
  }
}

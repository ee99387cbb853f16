/**
 * RFC 9457 problem details for the two refusals the middleware answers itself: 429 (quota
 * exceeded, the problem type registered by the ratelimit-headers draft) and 503 (the store is
 * down and its policy is to deny rather than admit requests unchecked).
 */
import type { Decision } from "../algorithms/decision.ts";
import { partsOf } from "./headers.ts";
import type { Policy } from "./policy.ts";

/** The media type of problem bodies. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** The problem type of the ratelimit-headers draft for an exceeded quota. */
export const QUOTA_EXCEEDED_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/** A problem details object as sent. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  "violated-policies"?: string[];
}

/** The names of the policies that denied `decision` (every policy when the store gave no parts). */
export function violatedPolicies(decision: Decision, policies: readonly Policy[]): string[] {
  const parts = partsOf(decision, policies.length);
  const names: string[] = [];
  for (let i = 0; i < parts.length; i++) if (!(parts[i] as Decision).allowed) names.push((policies[i] as Policy).name);
  return names.length > 0 ? names : policies.map((p) => p.name);
}

/** The 429 body for a denied decision. */
export function quotaExceeded(decision: Decision, policies: readonly Policy[]): ProblemDetails {
  const never = !Number.isFinite(decision.retryAfterMs);
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: "Request cannot be satisfied as assigned quota has been exceeded",
    status: 429,
    detail: never
      ? "This request costs more than the quota allows at once, so it can never succeed."
      : `Too many requests; retry after ${seconds} second${seconds === 1 ? "" : "s"}.`,
    "violated-policies": violatedPolicies(decision, policies),
  };
}

/** The 503 body when the store failed and its policy denies. */
export function storeUnavailable(): ProblemDetails {
  return {
    type: "about:blank",
    title: "Service Unavailable",
    status: 503,
    detail: "The rate limiter cannot reach its store, so the request was refused rather than admitted unchecked.",
  };
}

/** The 403 body for a client on the `denyList`. */
export function denied(): ProblemDetails {
  return {
    type: "about:blank",
    title: "Forbidden",
    status: 403,
    detail: "Requests from this client address are not accepted.",
  };
}

/** The 403 body for a banned key (too many denials); `decision.retryAfterMs` is the ban time left. */
export function banned(decision: Decision): ProblemDetails {
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  return {
    type: "about:blank",
    title: "Forbidden",
    status: 403,
    detail: `Too many requests were refused; this client is banned for ${seconds} more second${seconds === 1 ? "" : "s"}.`,
  };
}

/** The 400 body when `tier(req)` names a tier the rule does not have (naming no other tier). */
export function unknownTier(tier: string, rule: string): ProblemDetails {
  return {
    type: "about:blank",
    title: "Bad Request",
    status: 400,
    detail: `Unknown tier ${JSON.stringify(tier)} for rule ${JSON.stringify(rule)}.`,
  };
}

/**
 * RFC 9457 problem details: the one definition of every problem body sluice sends, from the
 * middleware, forward-auth and the service's JSON API, and the one reader of them (the service
 * client parses with {@link readProblem} / {@link slugOf}). Sluice's own problem types are
 * `urn:sluice:problem:<slug>`; an exceeded quota uses the type registered by the ratelimit-headers
 * draft. What each Decision is answered with (status, headers, which problem) is src/http/answer.ts.
 */
import type { Decision } from "../algorithms/decision.ts";
import { partsOf } from "./headers.ts";
import type { Policy } from "./policy.ts";

/** The media type of problem bodies. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** The problem type of the ratelimit-headers draft for an exceeded quota. */
export const QUOTA_EXCEEDED_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/** Sluice's problem types are this prefix and a slug (`urn:sluice:problem:unknown-rule`). */
export const PROBLEM_TYPE_PREFIX = "urn:sluice:problem:";

/** A problem details object as sent (extra members, e.g. `index` of a bad batch item, beside). */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  "violated-policies"?: string[];
  [member: string]: unknown;
}

/** A sluice problem of kind `slug`: the body every door writes for it. */
export function problem(
  status: number,
  slug: string,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
): ProblemDetails {
  return { type: `${PROBLEM_TYPE_PREFIX}${slug}`, title, status, detail, ...extra };
}

/** A problem body as read back: any of its members may be missing. */
export type ReadProblem = Partial<ProblemDetails>;

/** The problem in a parsed response body (empty when the body was not a problem object). */
export function readProblem(body: unknown): ReadProblem {
  return body !== null && typeof body === "object" && !Array.isArray(body) ? (body as ReadProblem) : {};
}

/** The slug of a problem's `type` (`urn:sluice:problem:unknown-rule` → `unknown-rule`, quota exceeded → `quota-exceeded`). */
export function slugOf(problem: ReadProblem): string {
  const type = problem.type;
  if (type === QUOTA_EXCEEDED_TYPE) return "quota-exceeded";
  return typeof type === "string" ? (type.split(/[:#]/).pop() ?? "") : "";
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

/** The 503 body when the store failed and its policy denies (`code`: the StoreError's code, when known). */
export function storeUnavailable(code?: string): ProblemDetails {
  return problem(
    503,
    "store-unavailable",
    "Store unavailable",
    "The rate limiter cannot reach its store, so the request was refused rather than admitted unchecked.",
    code === undefined ? {} : { code },
  );
}

/** The 403 body for a client on the `denyList`. */
export function denied(): ProblemDetails {
  return problem(403, "denied", "Forbidden", "Requests from this client address are not accepted.");
}

/** The body for a banned key (too many denials; 403 unless `status` says otherwise); `decision.retryAfterMs` is the ban time left. */
export function banned(decision: Decision, status = 403): ProblemDetails {
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  return problem(
    status,
    "banned",
    "Banned",
    `Too many requests were refused; this client is banned for ${seconds} more second${seconds === 1 ? "" : "s"}.`,
  );
}

/** The 400 body when `tier(req)` names a tier the rule does not have (naming no other tier). */
export function unknownTier(tier: string, rule: string): ProblemDetails {
  return problem(
    400,
    "unknown-tier",
    "Bad request",
    `Unknown tier ${JSON.stringify(tier)} for rule ${JSON.stringify(rule)}.`,
  );
}

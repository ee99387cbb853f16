/**
 * `throttlerHeaders: true`: the response headers exactly as @nestjs/throttler (v6) names and
 * fills them, so clients and dashboards reading them keep working after a migration. Per
 * member of the limit (a throttler), in order of window (the throttler sorts by `ttl`):
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds left), each with
 * the suffix `-<name>` unless the member is named `default`. The first member that refuses
 * writes `Retry-After[-<name>]` and ends the list, as the throttler throws there.
 */
import type { Decision } from "../algorithms/decision.ts";
import { retryAfterOf } from "../http/answer.ts";
import type { CheckedVerdict } from "../http/engine.ts";
import { ceilSeconds, partsOf, retryAfterSeconds, type SetHeader } from "../http/headers.ts";

/** The throttler's header suffix: none for the member named `default`. */
const suffixOf = (name: string): string => (name === "default" ? "" : `-${name}`);

/** Writes `verdict`'s headers as @nestjs/throttler does (see the file comment). */
export function writeThrottlerHeaders(verdict: CheckedVerdict, set: SetHeader): void {
  const { decision } = verdict;
  const policies = verdict.policies.policies;
  const parts = partsOf(decision, policies.length);
  // Figures are made up when the store failed and a fixed policy answered: none are sent.
  const counts = decision.failure === undefined || decision.failure.policy === "fallback";
  const members = policies
    .map((policy, i) => ({ name: policy.name, window: policy.windowSeconds, part: parts[i] as Decision }))
    .sort((a, b) => a.window - b.window); // stable: equal windows keep their order, as the throttler's
  for (const { name, part } of members) {
    const suffix = suffixOf(name);
    if (!part.allowed && counts) {
      const retry = retryAfterSeconds(part);
      if (retry !== undefined) set(`Retry-After${suffix}`, retry);
      return;
    }
    if (!counts) continue;
    set(`X-RateLimit-Limit${suffix}`, String(part.limit));
    set(`X-RateLimit-Remaining${suffix}`, String(Math.max(0, part.remaining)));
    set(`X-RateLimit-Reset${suffix}`, String(ceilSeconds(part.resetMs)));
  }
  // Refused with no member refusing (a ban, a failed store): the plain header.
  if (verdict.status !== 200) {
    const retry = retryAfterOf(decision);
    if (retry !== undefined) set("Retry-After", retry);
  }
}

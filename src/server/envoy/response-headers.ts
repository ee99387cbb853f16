/**
 * `response_headers_to_add` as envoyproxy/ratelimit fills it with LIMIT_RESPONSE_HEADERS_ENABLED:
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds) of the descriptor
 * closest to its limit (the least `limit_remaining` among those with a limit; the first on a tie).
 */
import type { RlsHeader, RlsStatus } from "./wire.ts";

/** The three headers for `statuses`, or none when no descriptor had a limit. */
export function limitHeaders(statuses: readonly RlsStatus[]): RlsHeader[] {
  let nearest: RlsStatus | undefined;
  for (const s of statuses)
    if (s.current_limit !== null && (nearest === undefined || s.limit_remaining < nearest.limit_remaining)) nearest = s;
  if (nearest === undefined || nearest.current_limit === null) return [];
  const reset = nearest.duration_until_reset;
  const seconds = reset === null ? 0 : reset.seconds + (reset.nanos > 0 ? 1 : 0);
  return [
    { key: "RateLimit-Limit", value: String(nearest.current_limit.requests_per_unit) },
    { key: "RateLimit-Remaining", value: String(nearest.limit_remaining) },
    { key: "RateLimit-Reset", value: String(seconds) },
  ];
}

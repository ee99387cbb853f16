/**
 * Combining member decisions of a composite rule: all members read one `now`, the request
 * passes only if every member allows it, and the figures are the strictest of the members.
 */
import type { Decision } from "../algorithms/decision.ts";

/**
 * The decisions to report for the members of a denied composite. Nothing was consumed, so a
 * member that would have allowed is reported as it stands: `restate(i)` re-evaluates member
 * `i` with cost 0 (allowed, unconsumed remaining and reset).
 */
export function unconsumed(parts: Decision[], restate: (i: number) => Decision): Decision[] {
  return parts.map((part, i) => (part.allowed ? restate(i) : part));
}

/**
 * The composite decision for `parts` (one per member, in spec order): `remaining` is the least,
 * `retryAfterMs`, `resetMs` and `delayMs` the greatest, `limit` that of the member with least
 * remaining. Time only helps every algorithm here, so at the greatest `retryAfterMs` all pass.
 */
export function combine(parts: Decision[]): Decision {
  let allowed = true;
  let tightest = parts[0] as Decision;
  let retryAfterMs = 0;
  let resetMs = 0;
  let delayMs = 0;
  for (const part of parts) {
    if (!part.allowed) allowed = false;
    if (part.remaining < tightest.remaining) tightest = part;
    retryAfterMs = Math.max(retryAfterMs, part.retryAfterMs);
    resetMs = Math.max(resetMs, part.resetMs);
    delayMs = Math.max(delayMs, part.delayMs);
  }
  return {
    allowed,
    limit: tightest.limit,
    remaining: tightest.remaining,
    retryAfterMs: allowed ? 0 : retryAfterMs,
    resetMs,
    delayMs: allowed ? delayMs : 0,
    parts,
  };
}

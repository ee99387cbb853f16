/**
 * Rate-limit response headers. The default follows draft-ietf-httpapi-ratelimit-headers-11:
 *
 *     RateLimit-Policy: "burst";q=100;w=60, "daily";q=5000;w=86400
 *     RateLimit: "burst";r=42;t=17, "daily";r=4990;t=80000
 *
 * (Structured Fields Lists of Strings with Integer parameters, one member per member of a
 * composite rule.) The older layouts are kept for clients that read them: draft-7
 * (`RateLimit: limit=100, remaining=42, reset=17`), draft-6 (`RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset`) and the de-facto `X-RateLimit-*` (reset as epoch
 * seconds). Those carry one limit only: the member with least remaining.
 *
 * Seconds are always rounded up, and a denied member's reset is never earlier than its
 * retry-after, so no header tells a client to come back before it could pass. Integers in the
 * Structured Fields layouts (draft-11, draft-7) are clamped to 15 digits, the most a parser
 * accepts (999999999999999: a limit of 1e15 or a window of millennia still parses).
 */
import type { Decision } from "../algorithms/decision.ts";
import type { Policy } from "./policy.ts";
import { sfInteger } from "./structured-fields.ts";

/** The header layouts `headers` accepts. */
export type HeaderFormat = "draft-11" | "draft-7" | "draft-6" | "legacy";

/** The layouts, for validation messages. */
export const HEADER_FORMATS: readonly HeaderFormat[] = ["draft-11", "draft-7", "draft-6", "legacy"];

/**
 * How the `legacy` layout writes `X-RateLimit-Reset`: an epoch second (express-rate-limit,
 * koa-ratelimit) or the seconds left (@fastify/rate-limit, @nestjs/throttler). Each adapter
 * sends what its framework's best-known limiter sends, so a migration keeps the header's meaning.
 */
export type LegacyReset = "epoch" | "delta";

/** Sets one response header. */
export type SetHeader = (name: string, value: string) => void;

/** A rule's policies with their (constant) `RateLimit-Policy` values precomputed. */
export interface PolicySet {
  readonly policies: readonly Policy[];
  /** draft-11 `RateLimit-Policy`. */
  readonly policy11: string;
  /** draft-6/7 `RateLimit-Policy`. */
  readonly policy7: string;
  /** Each policy's name as a serialised String (`"name"`), so requests do not re-escape it. */
  readonly quoted: readonly string[];
  /** @internal Each draft-11 `RateLimit` member up to its remaining count (`"name";r=`, after `, ` but the first). */
  readonly members: readonly string[];
  /**
   * @internal Per member, the last `;t=<seconds>` written and its seconds: a reset changes about once a
   * second, so most requests reuse the string instead of converting and joining it again.
   */
  readonly resets: ResetCache;
}

/** The last reset suffix of each member (see {@link PolicySet.resets}). */
interface ResetCache {
  readonly seconds: number[];
  readonly text: string[];
}

/** Serialises a Structured Fields String (the name is already checked to be printable ASCII). */
export function sfString(text: string): string {
  return `"${text.replace(/[\\"]/g, "\\$&")}"`;
}

/** Precomputes the policy header values of `policies`. */
export function compilePolicies(policies: readonly Policy[]): PolicySet {
  return {
    policies,
    policy11: policies
      .map((p) => `${sfString(p.name)};q=${sfInteger(p.quota)};w=${sfInteger(p.windowSeconds)}`)
      .join(", "),
    policy7: policies.map((p) => `${sfInteger(p.quota)};w=${sfInteger(p.windowSeconds)}`).join(", "),
    quoted: policies.map((p) => sfString(p.name)),
    members: policies.map((p, i) => `${i === 0 ? "" : ", "}${sfString(p.name)};r=`),
    resets: { seconds: policies.map(() => Number.NaN), text: policies.map(() => "") },
  };
}

/** `;t=<seconds>` of member `i`, reused while its seconds stay the same. */
function resetText(resets: ResetCache, i: number, seconds: number): string {
  if (resets.seconds[i] === seconds) return resets.text[i] as string;
  const text = `;t=${sfInteger(seconds)}`;
  resets.seconds[i] = seconds;
  resets.text[i] = text;
  return text;
}

/**
 * `value`, flattened in place. A value built by concatenation is a rope (a cons string) to V8,
 * and Node checks every header value with a regular expression whose fast path refuses a rope
 * (in callgrind ~450 instructions more per value, through the runtime); reading one character
 * flattens it for less. (The Fastify writer keeps the RateLimit value it holds flat the same way.)
 */
export function flat(value: string): string {
  value.charCodeAt(0);
  return value;
}

/** Whole seconds rounded up; a finite ms figure never rounds to an earlier second. */
export function ceilSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** Seconds until a member's quota is restored; for a denied member never before it could pass. */
function resetSeconds(part: Decision): number {
  return ceilSeconds(resetMillis(part));
}

/** ms until `part` is reset, never earlier than when a denied request could pass. */
function resetMillis(part: Decision): number {
  const retry = part.allowed || !Number.isFinite(part.retryAfterMs) ? 0 : part.retryAfterMs;
  return Math.max(part.resetMs, retry);
}

/** One decision per policy: the composite's parts, or the decision itself repeated when it has none. */
export function partsOf(decision: Decision, count: number): readonly Decision[] {
  return Array.from({ length: count }, (_, i) => partAt(decision, count, i));
}

/** The decision of policy `i` of `count` (an element of {@link partsOf}, without building the array per request). */
function partAt(decision: Decision, count: number, i: number): Decision {
  const parts = decision.parts;
  return parts !== undefined && parts.length === count ? (parts[i] as Decision) : decision;
}

/** The member the single-limit layouts report: the one with least remaining (as `combine` picks). */
function tightest(decision: Decision, count: number): Decision {
  let best = partAt(decision, count, 0);
  for (let i = 1; i < count; i++) {
    const p = partAt(decision, count, i);
    if (p.remaining < best.remaining) best = p;
  }
  return best;
}

/**
 * Writes the rate-limit headers of `decision` in `format`. `counts` false (the store failed
 * and a fixed policy answered) writes only the policy: its figures would be made up.
 * `nowMs` is used by `legacy` only, whose reset is an absolute time unless `legacyReset` is
 * `"delta"` (seconds left, rounded up).
 */
export function writeRateLimitHeaders(
  format: HeaderFormat,
  set: PolicySet,
  decision: Decision,
  counts: boolean,
  nowMs: () => number,
  header: SetHeader,
  legacyReset: LegacyReset = "epoch",
): void {
  if (format === "draft-11") {
    header("RateLimit-Policy", set.policy11);
    if (!counts) return;
    const count = set.policies.length;
    if (count === 1) {
      // One member (a single spec): its value alone, without concatenating onto "" first.
      const p = partAt(decision, 1, 0);
      header(
        "RateLimit",
        flat((set.members[0] as string) + sfInteger(p.remaining) + resetText(set.resets, 0, resetSeconds(p))),
      );
      return;
    }
    let value = "";
    for (let i = 0; i < count; i++) {
      const p = partAt(decision, count, i);
      value += (set.members[i] as string) + sfInteger(p.remaining) + resetText(set.resets, i, resetSeconds(p));
    }
    header("RateLimit", flat(value));
    return;
  }
  if (format !== "legacy") header("RateLimit-Policy", set.policy7);
  if (!counts) return;
  const t = tightest(decision, set.policies.length);
  const reset = Math.max(resetSeconds(t), decision.allowed ? 0 : resetSeconds(decision));
  if (format === "draft-7") {
    header("RateLimit", `limit=${sfInteger(t.limit)}, remaining=${sfInteger(t.remaining)}, reset=${sfInteger(reset)}`);
  } else if (format === "draft-6") {
    header("RateLimit-Limit", String(t.limit));
    header("RateLimit-Remaining", String(t.remaining));
    header("RateLimit-Reset", String(reset));
  } else {
    header("X-RateLimit-Limit", String(t.limit));
    header("X-RateLimit-Remaining", String(t.remaining));
    if (legacyReset === "delta") {
      header("X-RateLimit-Reset", String(reset));
      return;
    }
    // An absolute epoch second, rounded up once (rounding the relative seconds first could add 1 s).
    const resetAt = Math.max(resetMillis(t), decision.allowed ? 0 : resetMillis(decision));
    header("X-RateLimit-Reset", String(Math.ceil((nowMs() + resetAt) / 1000)));
  }
}

/** `Retry-After` for a denial: whole seconds rounded up, or undefined when it can never pass. */
export function retryAfterSeconds(decision: Decision): string | undefined {
  if (!Number.isFinite(decision.retryAfterMs)) return undefined;
  return String(Math.max(1, ceilSeconds(decision.retryAfterMs)));
}

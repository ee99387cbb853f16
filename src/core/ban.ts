/**
 * Escalation: after `after` denials within `withinMs`, a key is refused for `forMs` whatever
 * its limit says (like @fastify/rate-limit's `ban` and rate-limiter-flexible's
 * `blockDuration`). The only state a denial ever writes is this count.
 */

import { describeValue } from "./describe-value.ts";
import { ArgumentError } from "./errors.ts";

/** When to ban: `after` denials within `withinMs` ban the key for `forMs`. */
export interface BanPolicy {
  /** Denials that trigger a ban (a safe integer ≥ 1). */
  after: number;
  /** The span they must fall in, in ms, counted from the first of them. */
  withinMs: number;
  /** How long the ban lasts, in ms. */
  forMs: number;
}

/** A key's ban state: `n` denials counted since `since`, banned until `until`. */
export interface BanState {
  n: number;
  since: number;
  until: number;
}

/** A key that was never denied. */
export function freshBan(): BanState {
  return { n: 0, since: Number.NEGATIVE_INFINITY, until: Number.NEGATIVE_INFINITY };
}

/** When the ban state no longer changes any decision. */
export function banFreshAt(state: BanState, policy: BanPolicy): number {
  return Math.max(state.until, state.n > 0 ? state.since + policy.withinMs : Number.NEGATIVE_INFINITY);
}

/**
 * Counts one denial at `now`; returns true when it starts a ban. The count restarts when the
 * span since the first counted denial has passed, and after a ban begins.
 */
export function countDenial(state: BanState, policy: BanPolicy, now: number): boolean {
  if (state.n === 0 || now - state.since >= policy.withinMs) {
    state.since = now;
    state.n = 0;
  }
  state.n++;
  if (state.n < policy.after) return false;
  state.until = now + policy.forMs;
  state.n = 0;
  return true;
}

const FIELDS = ["after", "withinMs", "forMs"] as const;

/** Validates a ban policy; ArgumentError names the field and the value received. */
export function validateBan(input: unknown, where = ""): BanPolicy | undefined {
  if (input === undefined) return undefined;
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new ArgumentError(`${where}\`ban\` must be { after, withinMs, forMs } (got ${describeValue(input)})`);
  }
  for (const key of Object.keys(input)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      throw new ArgumentError(`${where}unknown \`ban\` option \`${key}\` (expected after, withinMs, forMs)`);
    }
  }
  const policy = input as Record<string, unknown>;
  for (const field of FIELDS) {
    const value = policy[field];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
      throw new ArgumentError(`${where}\`ban.${field}\` must be a positive integer (got ${describeValue(value)})`);
    }
  }
  return { after: policy.after as number, withinMs: policy.withinMs as number, forMs: policy.forMs as number };
}

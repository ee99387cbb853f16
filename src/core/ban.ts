/**
 * Escalation: after `after` denials within `withinMs`, a key is refused for `forMs` whatever
 * its limit says (like @fastify/rate-limit's `ban` and rate-limiter-flexible's
 * `blockDuration`). The only state a denial ever writes is this count.
 *
 * A capped store's key read back from its summary is over-counted: it is refused more often
 * than the key would be by an uncapped store, and banned on bans other keys left in its cells.
 * Its ban state is marked `readBack` and counts strikes as a chain (see `countDenial`), so that
 * whenever the uncapped store has the key banned, the capped one has too (docs/semantics.md §10).
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

/**
 * A key's ban state: `n` denials counted since `since`, banned until `until`. In read-back
 * mode `since` is the chain's last denial instead (see `countDenial`).
 */
export interface BanState {
  n: number;
  since: number;
  until: number;
  /** Set by a capped store on a record it read back from its summary: strikes count as a chain. */
  readBack?: boolean;
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
 * Marks the ban state of a record read back from a summary (undefined: a rule without a ban).
 * The numbers stay: a cell's (n, since) read as a chain of n denials ending at `since` counts
 * at least the strikes an exact record whose span began by `since` holds (see `countDenial`).
 */
export function markReadBack(state: BanState | undefined): void {
  if (state !== undefined) state.readBack = true;
}

/**
 * Counts one denial at `now`; returns true when the key is banned from it. The count restarts
 * when the span since the first counted denial has passed, and after a ban begins. A running
 * ban takes no strikes (decide-rule.ts), except in read-back mode.
 *
 * Read-back mode (a chain): `since` is the last denial's instant; a denial within `withinMs` of
 * it continues the chain, else starts one; from the `after`-th on every denial of the chain
 * bans (or extends the ban) for `forMs`, and denials count while a ban runs. A read-back key
 * sees every denial the uncapped store gives it and more; span counting of a superset shifts
 * the span's phase (an extra early denial bans and resets the count before the denials that
 * ban the key uncapped), a chain does not: any `after` denials less than `withinMs` apart end
 * it at least `after` long. Stricter than exact counting, for over-counted keys only.
 */
export function countDenial(state: BanState, policy: BanPolicy, now: number): boolean {
  if (state.readBack === true) return countChained(state, policy, now);
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

/** `countDenial` in read-back mode. */
function countChained(state: BanState, policy: BanPolicy, now: number): boolean {
  state.n = state.n > 0 && now - state.since < policy.withinMs ? state.n + 1 : 1;
  // Never earlier: a clock a little behind must not shorten the chain's reach.
  if (!(state.since >= now)) state.since = now;
  if (state.n < policy.after) return false;
  if (!(state.until >= now + policy.forMs)) state.until = now + policy.forMs;
  return true;
}

/**
 * Ends read-back mode when the whole record is fresh (`freshAt`, its `recordFreshAt`, has
 * passed): nothing read back still counts, so it decides exactly again. Not sooner: while its
 * members are over-counted its denials are still a superset of the key's own.
 */
export function settleReadBack(state: BanState, freshAt: number, now: number): void {
  if (state.readBack !== true || freshAt > now) return;
  state.readBack = false;
  state.n = 0;
  state.since = Number.NEGATIVE_INFINITY;
  state.until = Number.NEGATIVE_INFINITY;
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

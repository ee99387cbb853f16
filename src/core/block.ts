/**
 * rate-limiter-flexible's `block(key, ms)` on rules without a `ban` policy: the key is refused,
 * answered as banned, until `now + ms`; a later block replaces it, a reset clears it, refunds and
 * penalties still reach the members (they do not lift it), `get` reports it.
 *
 * Where the "blocked until" instant lives was chosen among three layouts:
 *
 * 1. A word in every record. A bare rule's record is its member's state itself (a number or a
 *    small object; on Redis GCRA's bare integer, fixed-window's INCRBY-able integer; a 24-byte
 *    compact slot): every never-blocked key would grow, and every check would read the word.
 * 2. A companion record under its own key, read by every check. Exact across processes only if
 *    every check reads it: a second Map lookup, a second Redis read on every check.
 * 3. (chosen) Beside the record, where a check notices it without any read of its own: the
 *    MemoryStore keeps a per-rule table of blocks that checks consult only while the rule has
 *    one (one field test per check otherwise); on Redis a blocked key *changes type*: a
 *    never-blocked key stays the plain string the hot path GETs, a blocked one is a hash
 *    `{ s: record, b: until }` that the hot path's GET refuses, sending the check down the full
 *    path. That is the one key every process reads, so another process sees the block at once,
 *    with no extra command on any check, and it expires and resets with the record.
 *
 * Rules with a `ban` keep using their ban slot (decideRule's `block`): it is already in their
 * record, and a block there replaces a running ban. This module is the one truth of what a
 * block answers; stores only decide where `until` is kept.
 */
import type { Decision } from "../algorithms/decision.ts";
import { bannedDecision, decideRule, type Operation } from "./decide-rule.ts";
import type { CompiledRule, RuleRecord } from "./rule.ts";

/**
 * What a store runs on a blocked key's record before answering {@link blockedAnswer}: refunds,
 * penalties and lease releases still change the members; checks, peeks, the block itself and
 * lease renewals only read one unit (a blocked check takes nothing; a blocked key's leases are
 * not renewed: they expire, or are released, as they stand); a get stays a get.
 */
export function underBlock(op: Operation): Operation {
  return op === "refund" || op === "penalty" || op === "get" || op === "release" ? op : "peek";
}

/** The cost to run {@link underBlock}'s operation with: one unit for a read. */
export function costUnderBlock(op: Operation, cost: number): number {
  return op === "refund" || op === "penalty" || op === "release" ? cost : 1;
}

/**
 * The answer for a key blocked until `until` (> now), from what its members say of one unit
 * (`members`, the result of {@link underBlock}'s operation): banned, retryAfterMs the time left,
 * never sooner than the members allow. Never a fresh `get` answer (a blocked key is not fresh).
 */
export function blockedAnswer(members: Decision, now: number, until: number): Decision {
  const d = bannedDecision(members, Math.ceil(until - now));
  if (members.approximate === true) d.approximate = true;
  return d;
}

/**
 * `op` on the record of a key blocked until `until` (> now), for stores that hold the record
 * itself (the MemoryStore goes through its tiers instead, with the same two functions above).
 */
export function decideBlocked(
  rule: CompiledRule,
  record: RuleRecord,
  now: number,
  cost: number,
  op: Operation,
  until: number,
  at?: number,
): Decision {
  const inner = underBlock(op);
  return blockedAnswer(decideRule(rule, record, now, costUnderBlock(op, cost), inner, at), now, until);
}

/** Whether a store keeps `rule`'s blocks beside its records (rules without a ban). */
export function blocksBeside(rule: CompiledRule): boolean {
  return rule.ban === undefined;
}

/**
 * The one place the check script's reply is decoded. The script sends its figures as the text
 * of one JSON array (one bulk string: a client decodes it in one call, where 4 integers per
 * check each cost thousands of instructions in ioredis's decoder). Its shape is fixed: per
 * check, 4 values per member: status (1 allowed, 0 denied, -1 the check failed; 2 allowed, on
 * a get's first member: the record is equivalent to a fresh one), remaining,
 * retryAfterMs when denied or delayMs when allowed, resetMs — the member decisions the Lua
 * `decideRule` made — then, for a rule with a ban, the ban's time left in ms (0: not banned); for
 * a rule without one, a block's time left replaces the first status (`b1/<ms>`, `b0/<ms>`).
 * Whole figures arrive as integers; the rest as exact `%.17g` numbers, or the strings `"inf"`,
 * `"-inf"` (the
 * script turns -0 into +0 where it encodes figures, as the Decision builder does). A failed
 * check carries its error text in place of its first `remaining`.
 */

import { type Decision, decision } from "../../algorithms/decision.ts";
import { blockedAnswer } from "../../core/block.ts";
import { combine } from "../../core/composite.ts";
import { bannedDecision, markFreshAnswer } from "../../core/decide-rule.ts";
import { StoreError } from "../../core/errors.ts";

/** Reply values per member decision. */
export const FIELDS = 4;

/** What decoding a check's reply needs to know of its rule. */
export interface ReplyLayout {
  /** The member limits, in spec order (what decisions report as `limit`; not sent). */
  readonly limits: readonly number[];
  /** Whether the rule has a ban (its checks carry one more value: the ban's time left). */
  readonly hasBan: boolean;
  /** Reply values per check of this rule (see {@link replyWidth}). */
  readonly width: number;
}

/** Reply values per check of a rule with `members` members, and a ban or not. */
export function replyWidth(members: number, ban: boolean): number {
  return members * FIELDS + (ban ? 1 : 0);
}

/**
 * The figures of a reply `[text]` (the script's reply once the guard's server time is taken
 * off): the array its JSON text holds, or undefined when it is not one.
 */
export function replyFigures(reply: unknown): unknown[] | undefined {
  if (!Array.isArray(reply) || reply.length !== 1 || typeof reply[0] !== "string") return undefined;
  try {
    const figures: unknown = JSON.parse(reply[0]);
    return Array.isArray(figures) ? figures : undefined;
  } catch {
    return undefined;
  }
}

function figure(value: unknown): number {
  if (typeof value === "number") return value;
  if (value === "inf") return Number.POSITIVE_INFINITY;
  if (value === "-inf") return Number.NEGATIVE_INFINITY;
  const parsed = typeof value === "string" && value !== "" ? Number(value) : Number.NaN;
  if (Number.isNaN(parsed)) throw new StoreError(`unexpected figure in the Redis reply: ${String(value)}`);
  return parsed;
}

/**
 * A block's time left on a rule without a ban rides on the first status as `b1/<ms>` or
 * `b0/<ms>` (src/core/block.ts, check.lua): the member's own status, and the ms.
 */
function blockOf(status: unknown): [number, number] | undefined {
  if (typeof status !== "string" || !status.startsWith("b")) return undefined;
  return [status[1] === "1" ? 1 : 0, figure(status.slice(3))];
}

/** One member's decision from the 4 values at `at`; `limit` is known from the spec, not sent. */
function member(reply: readonly unknown[], at: number, limit: number): Decision {
  const status = blockOf(reply[at])?.[0] ?? reply[at];
  const slot = figure(reply[at + 2]);
  if (status === 1 || status === 2) return decision(true, limit, figure(reply[at + 1]), 0, figure(reply[at + 3]), slot);
  if (status === 0) return decision(false, limit, figure(reply[at + 1]), slot, figure(reply[at + 3]));
  throw new StoreError(`unexpected status in the Redis reply: ${String(status)}`);
}

/**
 * The Decision of the check whose values start at `at` (members combined as the core combines
 * them, and a ban applied as the core applies it), or the StoreError the script reported for
 * it. Throws StoreError on a malformed reply.
 */
export function decodeCheck(reply: readonly unknown[], at: number, rule: ReplyLayout): Decision | StoreError {
  if (reply[at] === -1) return new StoreError(`the sluice script failed: ${String(reply[at + 1])}`);
  const { limits } = rule;
  let members: Decision;
  if (limits.length === 1) members = member(reply, at, limits[0] as number);
  else {
    const parts: Decision[] = [];
    for (let i = 0; i < limits.length; i++) parts.push(member(reply, at + i * FIELDS, limits[i] as number));
    members = combine(parts);
  }
  // Status 2 on the first member: a get whose record is equivalent to a fresh one.
  if (reply[at] === 2) markFreshAnswer(members);
  if (!rule.hasBan) {
    const block = blockOf(reply[at]);
    return block === undefined ? members : blockedAnswer(members, 0, block[1]);
  }
  const left = figure(reply[at + limits.length * FIELDS]);
  return left > 0 ? bannedDecision(members, left) : members;
}

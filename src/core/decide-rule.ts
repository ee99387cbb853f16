/**
 * The one decision path. Every store (the MemoryStore, the Redis Lua twin, the cluster primary)
 * and every test double decides a rule for one key by calling `decideRule` on the key's record:
 * composites all-or-nothing, bans, refunds and peeks live here and nowhere else.
 */
import type { Algorithm } from "../algorithms/algorithm.ts";
import { type Decision, decision } from "../algorithms/decision.ts";
import { type BanPolicy, countDenial, settleReadBack } from "./ban.ts";
import { combine, unconsumed } from "./composite.ts";
import { ArgumentError } from "./errors.ts";
import { banState, type CompiledRule, memberState, type RuleRecord, recordFreshAt } from "./rule.ts";

/**
 * What a decision does: take units, only report, or give units back; and rate-limiter-flexible's
 * calls: `penalty` takes units whether or not they fit, `block` refuses the key for `cost` ms
 * (in the ban slot of a rule with a `ban` policy; beside the record otherwise, kept by the
 * store: see block.ts), `get` is a peek of one unit that also tells
 * whether the record is equivalent to a fresh one (see `isFreshAnswer`). Leases (concurrency
 * members; rate members are untouched): `release` gives back `cost` leases whose receipt is
 * `at`, `renew` moves them to `now` (see `decideLease`).
 */
export type Operation = "check" | "peek" | "refund" | "penalty" | "block" | "get" | "release" | "renew";

/** Answers of `get` for a record equivalent to a fresh key's (a limiter answers `null`). */
const freshAnswers = new WeakSet<Decision>();

/** Marks `d` as a fresh `get` answer (a remote store decoding the primary's answer). */
export function markFreshAnswer(d: Decision): Decision {
  freshAnswers.add(d);
  return d;
}

/** Whether `d` is the answer of a `get` whose record was equivalent to a fresh key's. */
export function isFreshAnswer(d: Decision): boolean {
  return freshAnswers.has(d);
}

/**
 * Decides `op` for one key at `now` against its `record` (from `createRecord` for a key with no
 * stored state) and updates the record in place when the operation changes state: an allowed
 * check, a refund, or a denial counted toward a ban. A peek, and a denial without a ban,
 * change nothing. A refund returns what a peek of one unit then says; `at`, its receipt (the
 * instant the refunded check was decided), limits it to units that check took (see `Algorithm.refund`).
 */
export function decideRule(
  rule: CompiledRule,
  record: RuleRecord,
  now: number,
  cost: number,
  op: Operation,
  at?: number,
): Decision {
  // The hot path first: one test of `op` (each test against another name costs a string compare).
  // Kept this small so V8 inlines it into a store's check (it does not inline past 460 bytes of
  // bytecode): everything else is a call away.
  if (op === "check") return decideCheck(rule, record, now, cost);
  return decideOther(rule, record, now, cost, op, at);
}

/**
 * `decideRule(rule, record, now, cost, "check")`: a store's check path calls it directly (V8
 * counts every byte of bytecode it inlines into a caller, so the hot path has no `op` to test).
 */
export function decideCheck(rule: CompiledRule, record: RuleRecord, now: number, cost: number): Decision {
  return rule.bare
    ? (rule.members[0] as Algorithm).step(record, now, cost, true)
    : decideOther(rule, record, now, cost, "check", undefined);
}

/** `decideRule` past its hot path: composites, bans, and every operation but a bare rule's check. */
function decideOther(
  rule: CompiledRule,
  record: RuleRecord,
  now: number,
  cost: number,
  op: Operation,
  at: number | undefined,
): Decision {
  if (op === "penalty" || op === "block" || op === "get") return decideCall(rule, record, now, cost, op);
  if (op === "release" || op === "renew") return decideLease(rule, record, now, cost, op, at as number);
  if (rule.bare) {
    const algorithm = rule.members[0] as Algorithm;
    if (op !== "refund") return algorithm.step(record, now, cost, op === "check");
    algorithm.refund(record, now, cost, at);
    return algorithm.step(record, now, 1, false);
  }
  const ban = banState(rule, record);
  if (ban?.readBack === true) settleReadBack(ban, recordFreshAt(rule, record), now);
  // A refund gives units back even to a banned key (a group rolled back, say); the ban stays.
  if (op === "refund") {
    rule.members.forEach((m, i) => {
      m.refund(memberState(rule, record, i), now, cost, at);
    });
    if (ban !== undefined && ban.until > now) return banned(rule, record, now, ban.until);
    return evaluate(rule, record, now, 1, false);
  }
  if (ban !== undefined && ban.until > now) {
    // A read-back key's refusals all count (core/ban.ts): an uncapped store may count these as
    // strikes, the key being merely over its limit there.
    if (op === "check" && ban.readBack === true) countDenial(ban, rule.ban as BanPolicy, now);
    return banned(rule, record, now, ban.until);
  }
  const result = evaluate(rule, record, now, cost, op === "check");
  if (!result.allowed && op === "check" && ban !== undefined && countDenial(ban, rule.ban as BanPolicy, now)) {
    return banned(rule, record, now, ban.until);
  }
  return result;
}

/**
 * Whether a key with no stored record must be stored after `op` decided `result`: only when
 * the operation changed the record (a refund of a fresh key changes nothing that counts).
 */
export function storesNewRecord(rule: CompiledRule, op: Operation, result: Decision): boolean {
  // (A release or renewal of a fresh key finds no lease: nothing to store.)
  return (op === "check" && (result.allowed || rule.ban !== undefined)) || op === "penalty" || op === "block";
}

/**
 * Whether `op` (which decided `result`) changed a record the store already holds, so a store
 * that copies records must write it back: a fresh record's changes (above), every refund and
 * release, and a renewal that moved its leases.
 */
export function changesStoredRecord(rule: CompiledRule, op: Operation, result: Decision): boolean {
  return op === "refund" || op === "release" || (op === "renew" && result.allowed) || storesNewRecord(rule, op, result);
}

/**
 * rate-limiter-flexible's calls, kept off the check path. `penalty` forces `cost` units into
 * every member (past the limit if need be) and answers what a peek of one unit then says;
 * `block` sets the ban slot to refuse the key until `now + cost` (replacing a running ban);
 * `get` is a peek of one unit, marked when the record is equivalent to a fresh one.
 */
function decideCall(rule: CompiledRule, record: RuleRecord, now: number, cost: number, op: Operation): Decision {
  const ban = banState(rule, record);
  if (ban?.readBack === true) settleReadBack(ban, recordFreshAt(rule, record), now);
  if (op === "penalty") {
    rule.members.forEach((m, i) => {
      if (m.force === undefined) throw new ArgumentError(`penalty is not supported by ${m.kind}`);
      m.force(memberState(rule, record, i), now, cost);
    });
  } else if (op === "block") {
    // A rule without a ban has no slot for it: its store keeps the block beside the record (block.ts).
    if (ban === undefined) throw new ArgumentError("decideRule: a block without a ban slot is kept by the store");
    ban.until = now + cost;
  }
  const d =
    ban !== undefined && ban.until > now ? banned(rule, record, now, ban.until) : evaluate(rule, record, now, 1, false);
  return op === "get" && !(recordFreshAt(rule, record) > now) ? markFreshAnswer(d) : d;
}

/**
 * The lease operations, on concurrency members only (rate members are never touched). `release`
 * gives back `cost` leases whose receipt is exactly `at` (a lease that expired, or was released
 * already, frees nothing) and answers what a peek of one unit then says, as a refund does.
 * `renew` moves `cost` leases from `at` to `now`, in every concurrency member or in none: it is
 * allowed when every one of them still holds them (its answer's instant is their new receipt),
 * rate members reporting as they stand; when the lease is no longer held (expired or released;
 * or the rule has no concurrency member) nothing changes and it is denied, `retryAfterMs`
 * Infinity: that renewal can never pass (a new lease is a new check). A banned (or blocked) key
 * still releases, and is answered as banned; its leases are not renewed: they run out as they stand.
 */
function decideLease(
  rule: CompiledRule,
  record: RuleRecord,
  now: number,
  cost: number,
  op: "release" | "renew",
  at: number,
): Decision {
  const { members } = rule;
  const ban = banState(rule, record);
  if (ban?.readBack === true) settleReadBack(ban, recordFreshAt(rule, record), now);
  if (op === "release") {
    members.forEach((m, i) => {
      m.release?.(memberState(rule, record, i), now, cost, at);
    });
    if (ban !== undefined && ban.until > now) return banned(rule, record, now, ban.until);
    return evaluate(rule, record, now, 1, false);
  }
  if (ban !== undefined && ban.until > now) return banned(rule, record, now, ban.until);
  let held = false;
  for (let i = 0; i < members.length; i++) {
    const m = members[i] as Algorithm;
    if (m.renew === undefined) continue;
    if (!m.renew(memberState(rule, record, i), now, cost, at, false).allowed) {
      held = false;
      break;
    }
    held = true;
  }
  const parts = members.map((m, i) => {
    const state = memberState(rule, record, i);
    if (m.renew !== undefined) return m.renew(state, now, cost, at, held);
    // A rate member reports as it stands (cost 0); one past its limit (a penalty) does not
    // refuse a renewal, which takes nothing from it.
    const p = m.step(state, now, 0, false);
    return held && !p.allowed ? decision(true, p.limit, p.remaining, 0, p.resetMs) : p;
  });
  return members.length === 1 ? (parts[0] as Decision) : combine(parts);
}

/** The members decided at one `now`: all or nothing, committed only when every member allows. */
function evaluate(rule: CompiledRule, record: RuleRecord, now: number, cost: number, commit: boolean): Decision {
  const { members } = rule;
  if (members.length === 1) return (members[0] as Algorithm).step(memberState(rule, record, 0), now, cost, commit);
  const parts = members.map((m, i) => m.step(memberState(rule, record, i), now, cost, false));
  if (parts.some((p) => !p.allowed)) {
    // Nothing was consumed: members that would have allowed report as they stand (cost 0).
    return combine(
      unconsumed(parts, (i) => (members[i] as Algorithm).step(memberState(rule, record, i), now, 0, false)),
    );
  }
  if (commit) {
    members.forEach((m, i) => {
      m.step(memberState(rule, record, i), now, cost, true);
    });
  }
  return combine(parts);
}

/** A banned key: denied until `until`, and no sooner than its members would allow one unit. */
function banned(rule: CompiledRule, record: RuleRecord, now: number, until: number): Decision {
  return bannedDecision(evaluate(rule, record, now, 1, false), Math.ceil(until - now));
}

/**
 * The decision for a key banned for `left` more ms, given what its members say of one unit
 * (also how the Redis store rebuilds it from the Lua twin's figures).
 */
export function bannedDecision(members: Decision, left: number): Decision {
  const d = decision(false, members.limit, 0, Math.max(left, members.retryAfterMs), Math.max(left, members.resetMs));
  d.banned = true;
  if (members.parts !== undefined) d.parts = members.parts;
  return d;
}

/**
 * Refunds on a sliding log (or lease log) that came back from a compact slot as a bound of the
 * key's log (decide-approx.ts `decideBound`). Why (issue 34): the bound's entries are read back
 * at or after the real ones, and more of them may sit at one instant (a cell's entries read at
 * the newest), so the plain refund could take entries the key's real log keeps: (a) without a
 * receipt, the bound's newest entries were taken while the real log's newest no longer counted
 * at its own clock (a clock that then stepped back read the bound fuller of room than the log);
 * (b) with a receipt, a refund naming more units than its check took removed every entry the
 * bound read at that instant, where the real log held only the check's. Both admitted past the
 * key's limit (test/properties/log-refund-bound.test.ts).
 *
 * What is sound: the bound's newest entries that the real log holds at the very same instants
 * (`tail`: entries both logged at `now` itself, by checks admitted since the read-back while the
 * clock was at or past the bound's newest, so the real log, whose newest is never later,
 * logged them at `now` too). A refund takes only from those: the real log then gives back at
 * least as much, and every count the bound reads stays at or above the real one's. Anything
 * else the refund would take stays (the bound over-counts a little longer, until it is fresh).
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import { isLog, type SlidingLogState, takeAt } from "../../algorithms/sliding-log.ts";
import { type CompiledRule, memberState, type RuleRecord } from "../../core/rule.ts";

/** Per bound record, per member index: how many of its log's newest entries the real log holds at the same instants. */
const tails = new WeakMap<object, number[]>();

/** The newest entry of `s` (−∞ for an empty log). */
function newestOf(s: SlidingLogState): number {
  return s.n > 0 ? (s.buf[(s.head + s.n - 1) % s.buf.length] as number) : Number.NEGATIVE_INFINITY;
}

/** Whether `rule` has a log member (only those need the care of this module). */
export function hasLog(rule: CompiledRule): boolean {
  return rule.members.some(isLog);
}

/** The newest entry of each log member of `record` (NaN for other members), read before a check. */
export function logNewests(rule: CompiledRule, record: RuleRecord): number[] {
  return rule.members.map((m, i) =>
    isLog(m) ? newestOf(memberState(rule, record, i) as SlidingLogState) : Number.NaN,
  );
}

/**
 * After a check the bound admitted at `now` (`before`: `logNewests` read before it): a log whose
 * newest was at or before `now` logged the `cost` entries at `now`, as the real log did; one
 * whose newest was later logged them there, and its tail is no longer known.
 */
export function noteAdmitted(
  rule: CompiledRule,
  record: RuleRecord,
  before: number[],
  now: number,
  cost: number,
): void {
  const tail = tails.get(record as object) ?? rule.members.map(() => 0);
  rule.members.forEach((m, i) => {
    if (!isLog(m)) return;
    const s = memberState(rule, record, i) as SlidingLogState;
    const known = (before[i] as number) <= now ? (tail[i] as number) + cost : 0;
    // Entries the commit dropped (out of the window, or past the limit) were the oldest.
    tail[i] = Math.min(known, s.n);
  });
  tails.set(record as object, tail);
}

/** Forgets what is known of `record`'s tails (a penalty, a block, a lease moved: written where the real log may not have). */
export function forgetTails(record: RuleRecord): void {
  tails.delete(record as object);
}

/**
 * Refunds `cost` units (receipt `at`, if any) on a bound `record` at `now`: every member but the
 * logs as `Algorithm.refund` does; each log gives back only from its known tail (see the module).
 */
export function refundBound(rule: CompiledRule, record: RuleRecord, now: number, cost: number, at?: number): void {
  const tail = tails.get(record as object);
  rule.members.forEach((m: Algorithm, i) => {
    const state = memberState(rule, record, i);
    if (!isLog(m)) {
      m.refund(state, now, cost, at);
      return;
    }
    const s = state as SlidingLogState;
    const known = Math.min(tail?.[i] ?? 0, s.n);
    if (known === 0) return;
    const t = Math.max(now, newestOf(s));
    const W = m.horizonMs;
    let take = 0;
    if (at === undefined) {
      // The newest still counting, as the log's own refund takes them, only from the tail.
      while (take < cost && take < known && (s.buf[(s.head + s.n - 1 - take) % s.buf.length] as number) > t - W) take++;
      s.n -= take;
    } else if (at > t - W) {
      // Only the tail's entries logged at the receipt (entries of one instant are alike).
      let atReceipt = 0;
      for (let k = s.n - known; k < s.n; k++) if (s.buf[(s.head + k) % s.buf.length] === at) atReceipt++;
      take = takeAt(s, at, Math.min(cost, atReceipt));
    }
    (tail as number[])[i] = known - take;
  });
}

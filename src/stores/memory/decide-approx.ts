/**
 * A key read back from its rule's summary: decided on the summary's estimate with what it took
 * since (`own`) added; what the decision takes or gives back is applied to `own` alone, so the
 * summary grows by real units only.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { Decision } from "../../algorithms/decision.ts";
import { markReadBack } from "../../core/ban.ts";
import { decideRule, type Operation } from "../../core/decide-rule.ts";
import { banState, type CompiledRule, memberState, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import { isRate, unitMs } from "../compact/summary-codec.ts";
import { type Approx, oweUnits } from "./approx.ts";
import { forgetTails, hasLog, logNewests, noteAdmitted, refundBound } from "./bound-log-refund.ts";
import type { StoreState } from "./store-state.ts";
import { newSketch } from "./summarise.ts";
import type { Table } from "./table.ts";

/**
 * A key read back from the summary: decided on the summary's estimate with `own` added, and
 * what the decision takes (or gives back) is applied to `own` alone. When the summary no
 * longer holds anything for the key, `own` is its exact record again.
 */
export function decideApprox(
  s: StoreState,
  table: Table,
  key: string,
  approx: Approx,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  const rule = table.rule;
  if (approx.bound) return decideBound(s, table, key, approx, cost, t, op, at);
  table.sketch ??= newSketch(s, table);
  const sketch = table.sketch;
  const present = sketch.present(approx.h1, approx.h2, t);
  if (!present && approx.settled(t)) return decideExactAgain(table, key, approx, cost, t, op, at);
  const estimate = sketch.estimate(approx.own, approx.rate, present, t, (a, b) => permits(rule, a, b, t, cost));
  const own = approx.own;
  const ban = banState(rule, estimate);
  const mine = banState(rule, own);
  if (ban !== undefined && mine !== undefined) {
    // The key's strikes are a chain on its own record (core/ban.ts), begun from its cells' at
    // the first read-back; after that the cells' strikes are other keys' and only their ban
    // still counts (the estimate summed `own`'s count into them: it is replaced by the chain).
    if (mine.readBack !== true) {
      mine.n = ban.n;
      mine.since = ban.since;
      markReadBack(mine);
    }
    ban.n = mine.n;
    ban.since = mine.since;
    if (mine.until > ban.until) ban.until = mine.until;
    markReadBack(ban);
  }
  const result = decideRule(rule, estimate, t, cost, op, at);
  result.approximate = true;
  s.approximate++;
  if (!result.allowed && op === "check") s.refused++;
  if (op === "check" && result.allowed) {
    rule.members.forEach((m: Algorithm, i) => {
      m.step(memberState(rule, own, i), t, cost, true);
    });
    oweUnits(rule, approx.rate, cost);
  } else if (op === "check" && ban !== undefined && mine !== undefined) {
    // The denial counted on the estimate's chain (or its end, when it settled) is the key's.
    mine.n = ban.n;
    mine.since = ban.since;
    mine.until = ban.until;
    mine.readBack = ban.readBack === true;
  } else if (op === "penalty" || op === "block") {
    // What the call wrote on the estimate is written on the key's own record too; a penalty's
    // units are a backlog on top of the summary's as an admission's are (each maps an instant
    // x to max(x, now) + cost·T), so they are added to the debt as well.
    decideRule(rule, own, t, cost, op);
    if (op === "penalty") oweUnits(rule, approx.rate, cost);
  } else if (op === "refund") {
    rule.members.forEach((m: Algorithm, i) => {
      m.refund(memberState(rule, own, i), t, cost, at);
      if (isRate(m)) {
        // What the refund gave back (a receipt gives back only what has not drained since).
        const unit = cost * unitMs(m);
        const give = at === undefined ? unit : Math.max(0, unit - Math.max(0, t - at));
        approx.rate[2 * i] = (approx.rate[2 * i] as number) - give;
      }
    });
  } else if (op === "release" || (op === "renew" && result.allowed)) {
    // The key's own leases are released (or moved) exactly; what the summary holds for it only
    // expires (conservative: a summarised lease counts until its leaseMs ends).
    decideRule(rule, own, t, cost, op, at);
  }
  return result;
}

/**
 * A key whose record came back from a compact slot that held a bound of it (approx.ts
 * `Approx.bound`): decided on that bound, its own record from now on, `approximate` until it is
 * fresh (then the state it over-counted is fresh too, and the record is exact again).
 */
function decideBound(
  s: StoreState,
  table: Table,
  key: string,
  approx: Approx,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  const rule = table.rule;
  const own = approx.own;
  if (!(recordFreshAt(rule, own) > t)) return decideExactAgain(table, key, approx, cost, t, op, at);
  let result: Decision;
  if (!hasLog(rule) || op === "peek" || op === "get") result = decideRule(rule, own, t, cost, op, at);
  else if (op === "refund") {
    // A log's bound gives back only entries the key's real log holds at the same instants
    // (bound-log-refund.ts: a plain refund let keys past their limit, issue 34).
    refundBound(rule, own, t, cost, at);
    result = decideRule(rule, own, t, 1, "peek");
  } else if (op === "check") {
    const before = logNewests(rule, own);
    result = decideRule(rule, own, t, cost, op, at);
    if (result.allowed) noteAdmitted(rule, own, before, t, cost);
  } else {
    result = decideRule(rule, own, t, cost, op, at);
    forgetTails(own);
  }
  result.approximate = true;
  s.approximate++;
  if (!result.allowed && op === "check") s.refused++;
  return result;
}

/** Whether record `a` admits more than `b` for `cost` at `t` (allowed first, then more remaining, then sooner). */
function permits(rule: CompiledRule, a: RuleRecord, b: RuleRecord, t: number, cost: number): boolean {
  const da = decideRule(rule, a, t, cost, "peek");
  const db = decideRule(rule, b, t, cost, "peek");
  if (da.allowed !== db.allowed) return da.allowed;
  if (da.remaining !== db.remaining) return da.remaining > db.remaining;
  return da.retryAfterMs < db.retryAfterMs;
}

/**
 * A read-back key whose own record is exact again: a writing operation puts that record back in
 * the key's place (a peek or a get only reads), and the record decides alone.
 */
function decideExactAgain(
  table: Table,
  key: string,
  approx: Approx,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  if (op !== "peek" && op !== "get" && table.find(key) === approx) table.replace(key, approx.own);
  return decideRule(table.rule, approx.own, t, cost, op, at);
}

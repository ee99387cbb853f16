/**
 * The restore's check of a saved record against its rule (MemoryStore `restore`): the layout
 * first, then what the record decides, so a tampered record (a negative count, a buffer
 * position past its buffer, a NaN instant) can never poison decisions.
 */
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, createRecord, memberState, type RuleRecord } from "../../core/rule.ts";
import { sameLayout } from "./snapshot.ts";

/**
 * A check of saved records for `rule` at `t`: whether a record has the rule's layout and decides
 * figures that are numbers, not negative, and within the limit. A token bucket's balance below
 * zero is not tampering: a penalty wrote it (see `owedAsEmpty`).
 */
export function restorable(rule: CompiledRule, t: number): (record: unknown) => boolean {
  const template = createRecord(rule);
  return (record) => {
    if (!sameLayout(template, owedAsEmpty(rule, record))) return false;
    const d = decideRule(rule, structuredClone(record) as RuleRecord, t, 1, "peek");
    const figures = [d.remaining, d.retryAfterMs, d.resetMs, d.delayMs];
    return figures.every((x) => !Number.isNaN(x) && x >= 0) && d.remaining <= d.limit;
  };
}

/**
 * `record` as the restore's layout check reads it: a token bucket's balance below zero is the
 * store's own state (a penalty takes units whether or not they fit: token-bucket.ts `force`),
 * read there as an empty bucket; every other figure as it is. A copy, made only for a rule with
 * a token bucket. (Read as tampering, it dropped the whole table and its sketch on restore.)
 */
function owedAsEmpty(rule: CompiledRule, record: unknown): unknown {
  // Not an object: no bucket in it (the layout check refuses it as it is).
  if (typeof record !== "object" || record === null || !rule.members.some((m) => m.kind === "token-bucket")) {
    return record;
  }
  const copy = structuredClone(record);
  rule.members.forEach((m, i) => {
    if (m.kind !== "token-bucket") return;
    // Not yet checked: `memberState` of a malformed record may be anything (the layout check then refuses it).
    const state: unknown = memberState(rule, copy as RuleRecord, i);
    if (typeof state !== "object" || state === null) return;
    const b = (state as { b?: unknown }).b;
    if (typeof b === "number" && Number.isFinite(b) && b < 0) (state as { b: number }).b = 0;
  });
  return copy;
}

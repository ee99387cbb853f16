/**
 * A rule's record as text, for stores that keep records outside the process (a database row,
 * a key-value item): JSON with ±Infinity kept (an instant that was never set is -Infinity), the
 * same encoding the MemoryStore's state file uses. Reading back checks the record has the
 * layout of the rule's own records, so state written under another shape is refused, not misread.
 */
import { ArgumentError } from "../../core/errors.ts";
import { type CompiledRule, createRecord, type RuleRecord } from "../../core/rule.ts";
import { replacer, reviver, sameLayout } from "../memory/snapshot.ts";

/** `record` as text (JSON; ±Infinity and NaN written as `{"$n": "Infinity"}`). */
export function recordToText(record: RuleRecord): string {
  return JSON.stringify(record, replacer);
}

/** The record `text` holds, for `rule`; ArgumentError when it is not one of `rule`'s records. */
export function recordFromText(rule: CompiledRule, text: string): RuleRecord {
  let record: unknown;
  try {
    record = JSON.parse(text, reviver);
  } catch (error) {
    throw new ArgumentError(`not a sluice record: ${(error as Error).message}`);
  }
  // Signed: a penalty may leave a figure below zero (a token bucket's balance).
  if (!sameLayout(createRecord(rule), record, true)) {
    throw new ArgumentError(`record does not have the layout of a ${rule.shape} record (got ${text.slice(0, 80)})`);
  }
  return record;
}

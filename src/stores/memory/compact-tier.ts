/**
 * Which layout a MemoryStore's compact tier takes: dense (16-byte slots, one word of state:
 * dense-codec.ts) while every compactable rule it holds fits one word, else 24-byte slots (two
 * words: state-codec.ts). Chosen by the first record pushed into the tier; a record of a rule
 * that needs two words, once a dense tier exists, turns it into a 24-byte one once (the dense slots' buckets
 * come from a hash of the key's text, which is not kept, so their records cannot move to the
 * new table: they are summarised, conservatively).
 */
import { type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import { CompactTable } from "../compact/compact-table.ts";
import { oneWordRule, readState } from "../compact/dense-codec.ts";
import { STATE_WORDS } from "../compact/state-codec.ts";
import { now, type StoreState } from "./store-state.ts";
import { summarise } from "./summarise.ts";
import type { Table } from "./table.ts";

/**
 * Float64 words of state per slot for a tier created for `rule`'s record: 1 when it fits the
 * dense layout. Only the rule's own shape decides (not the other rules bound), so a restarted
 * store, which may hold other tables, chooses as the store it was saved from did.
 */
function wordsNeeded(rule: Table["rule"]): number {
  return oneWordRule(rule) ? 1 : STATE_WORDS;
}

/**
 * The compact tier a record of `table` goes into, created (or widened) as its rules need;
 * undefined when the budget holds no bucket.
 */
export function compactFor(s: StoreState, table: Table, t: number): CompactTable | undefined {
  const compact = s.compact;
  if (compact !== undefined) {
    if (compact.stateWords === 1 && !oneWordRule(table.rule)) widen(s, compact, table, t);
    return s.compact;
  }
  const words = wordsNeeded(table.rule);
  if (s.budget.compactBudget < CompactTable.bytesFor(1, words)) return undefined;
  s.compact = new CompactTable(CompactTable.bucketsFor(s.budget.compactBudget, words), words);
  return s.compact;
}

/** Replaces the dense tier by a 24-byte one: what the dense one held is summarised. */
function widen(s: StoreState, dense: CompactTable, claimer: Table, t: number): void {
  s.compact =
    s.budget.compactBudget >= CompactTable.bytesFor(1)
      ? new CompactTable(CompactTable.bucketsFor(s.budget.compactBudget))
      : undefined;
  for (const owner of s.byIndex) {
    if (owner === undefined || owner.compactSize === 0) continue;
    const at = owner === claimer ? t : now(owner);
    dense.forEach(owner.index, (slot, h1, h2) => {
      const record: RuleRecord = readState(owner.rule, dense.words, dense.stateIndex(slot), 1, owner.frame);
      if (recordFreshAt(owner.rule, record) > at) summarise(s, owner, h1, h2, record, at);
    });
    owner.compactSize = 0;
  }
}

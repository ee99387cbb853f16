/**
 * Room in the `Map` tier: a record in, and when the tier is full one out first. The victim comes
 * from the rule holding the most records (each table's segmented LRU gives its own: probation's
 * oldest first) and goes down a tier: into the compact tier when its record fits there, else
 * into its rule's summary.
 */
import { decideRule } from "../../core/decide-rule.ts";
import type { RuleRecord } from "../../core/rule.ts";
import { recordFreshAt } from "../../core/rule.ts";
import type { CompactTable } from "../compact/compact-table.ts";
import { fitsCompact, readState, writeState, writtenExactly } from "../compact/dense-codec.ts";
import { Approx } from "./approx.ts";
import { compactFor } from "./compact-tier.ts";
import { frameFor } from "./pack-frame.ts";
import { now, type StoreState } from "./store-state.ts";
import { newSketch, summarise } from "./summarise.ts";
import { rotations, type Table } from "./table.ts";

/** Stores a record in the `Map` tier (`returning`: straight into the protected segment), first pushing one out if it is full. */
export function insert(s: StoreState, table: Table, key: string, record: unknown, t: number, returning = false): void {
  // Tables drop fresh generations on their own (only by rotating): count again before evicting anything.
  if (s.size >= s.budget.maxKeys && s.countedAt !== rotations.count) {
    s.countedAt = rotations.count;
    s.size = s.countRecords();
  }
  if (s.size >= s.budget.maxKeys) evict(s, table, t);
  table.add(key, record, returning);
  s.size++;
}

/**
 * Makes room for one record. The victim comes from the rule holding the most records, so a
 * flood through one rule pushes out that rule's own records and never another's while the
 * other holds fewer: capacity is shared fairly between rules. The victim goes to the compact
 * tier when its record fits there, else into its rule's summary.
 */
export function evict(s: StoreState, inserting: Table, t: number): void {
  let victim = inserting;
  // With many rules the fullest is looked for once per max(64, rules) evictions, not on every
  // one: amortised O(1) whatever the number of rules. Between scans the inserting rule is the
  // victim when it holds at least as many as the last fullest (so rules flooded in turn, which
  // keep overtaking each other, never force a scan each).
  const cached = s.fullest;
  if (s.tables.size <= 4 || --s.scanIn <= 0 || cached === undefined || s.tables.get(cached.id) !== cached) {
    s.scanIn = Math.max(64, s.tables.size);
    for (const table of s.tables.values()) if (table.size > victim.size) victim = table;
    s.fullest = victim;
  } else if (cached.size > inserting.size) victim = cached;
  else s.fullest = inserting;
  const entry = victim.shift();
  if (entry === undefined) return;
  const [key, held] = entry;
  s.size--;
  s.evicted++;
  const at = victim === inserting ? t : now(victim);
  let record = held;
  // A key read back from the summary goes on as a bound of its state (the row it decides on with
  // what it took since added on top): into the compact tier as a returning key, so a flood cannot
  // push it back into the summary, where each read-back would join it again (issue 34, "any
  // number of rules": 700 flooded rules each refused 12% of returning keys' requests).
  const readBack = held instanceof Approx && !held.bound ? held : undefined;
  if (readBack !== undefined) {
    victim.sketch ??= newSketch(s, victim);
    record = victim.sketch.boundOf(readBack.h1, readBack.h2, readBack.own, readBack.rate, at);
  } else if (held instanceof Approx) record = held.own; // a bound read back from a compact slot stays one
  if (!(recordFreshAt(victim.rule, record as RuleRecord) > at)) return; // fresh: nothing to keep
  const h = s.hash(key);
  const h1 = h[0] as number;
  const h2 = h[1] as number;
  const compact = victim.index > 0 && fitsCompact(victim.rule) ? compactFor(s, victim, at) : undefined;
  if (compact !== undefined) {
    // A key that came back (the protected segment's, or one read back from the summary) is
    // protected in the compact tier too, so a flood of keys that come once cannot push it into
    // the summary, unless it has spent its limit: read back from the summary it would be
    // refused all the same, and a flood of keys spending their limit in one burst (promoted by
    // their own repeats) stays unprotected.
    const returning =
      (victim.shiftedProtected || readBack !== undefined) && decideRule(victim.rule, record, at, 1, "peek").allowed;
    // Before the claim: moving the frame re-encodes the table's slots (slot numbers change).
    const frame = frameFor(s, victim, at);
    const slot = compact.claim(victim.index, h, returning);
    pushedOut(s, compact, victim, at);
    const state = compact.stateIndex(slot);
    if (writeState(victim.rule, record as RuleRecord, compact.words, state, compact.stateWords, frame)) {
      // A slot that holds a bound of the record says so: decisions from it are not exact.
      const bound =
        record !== held ||
        !writtenExactly(victim.rule, record as RuleRecord, compact.words, state, compact.stateWords, frame);
      if (bound) compact.markBound(slot);
      victim.compactSize++;
      return;
    }
    compact.remove(slot);
  }
  // Its bound joins the summary by its maximum: idempotent, so nothing is counted twice.
  summarise(s, victim, h1, h2, record as RuleRecord, at);
}

/** Summarises what the compact tier's last `claim` pushed out, if anything (`at`: the instant of `claimer`'s clock). */
export function pushedOut(s: StoreState, compact: CompactTable, claimer: Table, at: number): void {
  const pushed = compact.victim;
  if (pushed.table === 0) return;
  const owner = s.byIndex[pushed.table];
  if (owner === undefined) return;
  owner.compactSize--;
  const ownerNow = owner === claimer ? at : now(owner);
  const old = readState(owner.rule, compact.victimWords, 0, compact.stateWords, owner.frame);
  if (recordFreshAt(owner.rule, old) > ownerNow) summarise(s, owner, pushed.h1, pushed.h2, old, ownerNow);
}

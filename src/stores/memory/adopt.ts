/**
 * A restored table's records moved into a bound table: each key back in its tier (its `Map`
 * segment, its compact bucket), the summary at its width, and what does not fit summarised,
 * with the reasons in the restore report.
 */
import { blocksBeside } from "../../core/block.ts";
import { type CompiledRule, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import { CompactTable } from "../compact/compact-table.ts";
import { denseRule, writeState } from "../compact/dense-codec.ts";
import { compactable, decodeRecord, STATE_WORDS } from "../compact/state-codec.ts";
import { Approx } from "./approx.ts";
import { restorable } from "./restore-check.ts";
import type { RestoredTable } from "./restore-report.ts";
import { Sketch } from "./sketch.ts";
import type { TableSnapshot } from "./snapshot.ts";
import { now, type StoreState } from "./store-state.ts";
import { summarise } from "./summarise.ts";
import type { Table } from "./table.ts";
import { evict, pushedOut } from "./victim.ts";

/**
 * Moves a restored table's records into `table`, if every one has the rule's layout: each
 * `Map` record into its segment, each compact record into its bucket (when this tier has the
 * saved one's size and the table its saved index), the summary at its width (folded to fit
 * this store's budget). What does not fit is summarised; `report` says so.
 */
export function adopt(s: StoreState, table: Table, snapshot: TableSnapshot, report: RestoredTable): void {
  const rule = table.rule;
  const t = now(table);
  const sane = restorable(rule, t);
  const refuse = (why: string) => {
    report.status = "dropped";
    report.dropped = report.saved;
    report.reasons.push(`${why}: the table is refused whole (its keys start fresh)`);
  };
  const bad = snapshot.records.find(([, record]) => !sane(record));
  if (bad !== undefined) {
    refuse(`the record of key ${JSON.stringify(bad[0])} does not fit the rule's layout`);
    return;
  }
  // Compact records are checked too before anything is loaded.
  const scratch = new Float64Array(STATE_WORDS);
  const rows: Array<[number, number, number, number, number | undefined, RuleRecord, boolean]> = [];
  for (const [h1, h2, w0, w1, bucket, returning] of snapshot.compact ?? []) {
    scratch[0] = w0 as number;
    scratch[1] = w1 as number;
    const record = decodeRecord(rule, scratch, 0);
    if (!sane(record)) {
      refuse(`a compact record (fingerprint ${h1}) does not fit the rule's layout`);
      return;
    }
    rows.push([h1 as number, h2 as number, w0 as number, w1 as number, bucket, record, returning === 1]);
  }
  report.status = "adopted";
  // Blocks beside the records (rules without a ban) end at absolute instants, like records:
  // an ended one is dropped when next seen or swept (the binding's clock may not be set yet).
  for (const [key, until] of snapshot.blocks ?? []) {
    if (!blocksBeside(rule)) continue;
    table.blocks ??= new Map();
    table.blocks.set(key, until);
  }
  const seed = snapshot.seed ?? snapshot.sketch?.seed;
  const hashed = rows.length > 0 || snapshot.sketch !== undefined || snapshot.records.some((r) => r.length === 3);
  // Fingerprints and cells were placed with the saved seed: usable only if we can take it.
  const usable = hashed && seed !== undefined && (seed === s.seed || s.unhashed());
  if (usable) s.seed = seed as number;
  const summarisedBefore = s.summarised;
  // Probation's records first, then the protected segment's (keys that came back) into theirs.
  const first = snapshot.records.length - (snapshot.protected ?? 0);
  snapshot.records.forEach(([key, record, rate], i) => {
    if (table.delete(key)) s.size--;
    const freshAt = recordFreshAt(rule, record);
    // A read-back key is kept even when what it took since is fresh: its debts may still count.
    if (rate === undefined && !(freshAt > t)) {
      report.expired++; // decides as a fresh key: nothing to keep
      return;
    }
    if (s.size >= s.budget.maxKeys) evict(s, table, t);
    table.adopt(
      key,
      rate === undefined ? record : readBack(s, key, record as RuleRecord, rate, rule),
      freshAt,
      i >= first,
    );
    s.size++;
    report.exact++;
  });
  if (hashed && !usable) {
    report.dropped += rows.length;
    report.reasons.push(
      "this store had hashed keys with another seed already: the compact records and the summary are dropped (restore into a new store)",
    );
  }
  if (usable && snapshot.sketch !== undefined) adoptSketch(s, table, snapshot.sketch, t, report);
  if (usable) adoptCompact(s, table, snapshot, rows, t, report);
  // Records pushed out of the exact tiers to make room (this store is smaller than the saved one).
  const pushed = s.summarised - summarisedBefore - report.summarised;
  if (pushed > 0) {
    report.exact -= Math.min(report.exact, pushed);
    report.summarised += pushed;
    report.reasons.push(
      `${pushed} records did not fit this store's exact tiers (a smaller \`maxKeys\` or \`maxBytes\` than the saved store's) and were summarised`,
    );
  }
}

/** A key read back from the summary, as saved: what it took since (`own`) and its debts. */
function readBack(s: StoreState, key: string, own: RuleRecord, rate: number[], rule: CompiledRule): Approx {
  const h = s.hash(key);
  const approx = new Approx(own, h[0] as number, h[1] as number, rule);
  // The same shape has the same rate-based members: the pairs line up.
  if (rate.length === approx.rate.length) for (let i = 0; i < rate.length; i++) approx.rate[i] = rate[i] as number;
  return approx;
}

/** Loads a saved summary into `table` (joined with one it has), folded to fit this store's budget. */
function adoptSketch(
  s: StoreState,
  table: Table,
  saved: NonNullable<TableSnapshot["sketch"]>,
  t: number,
  report: RestoredTable,
): void {
  const sketch = new Sketch(table.rule, saved.width);
  if (sketch.width !== saved.width || !sketch.load(saved.cells)) {
    report.reasons.push("its summary does not fit the rule's cells and is dropped (keys it held read as new)");
    return;
  }
  const from = sketch.width;
  let others = 0;
  for (const other of s.tables.values()) if (other !== table) others += other.sketch?.bytes ?? 0;
  const own = table.sketch;
  while (
    sketch.width > 1 &&
    (sketch.width > s.budget.sketchWidth || others + Math.max(sketch.bytes, own?.bytes ?? 0) > s.budget.summaryBudget)
  ) {
    sketch.fold(t);
  }
  if (own === undefined) table.sketch = sketch;
  else own.absorb(sketch, t);
  // Unless the filter came with the file and places this table's keys where it did, the file
  // says nothing of which keys the cells hold: until they stop mattering, every key may be in them.
  if (s.filtered.get(table.id) !== table.index) {
    table.unfilteredUntil = Math.max(table.unfilteredUntil, (table.sketch as Sketch).freshAt);
  }
  const width = (table.sketch as Sketch).width;
  if (width < from) {
    report.reasons.push(
      `its summary was folded from ${from} to ${width} cells per row to fit this store's \`maxBytes\` or \`sketchWidth\` (more keys may be over-counted, none under)`,
    );
  }
}

/**
 * Puts saved compact records back: into their own buckets when this store's compact tier has
 * the saved one's size and the table its saved index (exact, the key finds its record), else
 * into the summary (the bucket hash comes from the key's text, which is not saved).
 */
function adoptCompact(
  s: StoreState,
  table: Table,
  snapshot: TableSnapshot,
  rows: Array<[number, number, number, number, number | undefined, RuleRecord, boolean]>,
  t: number,
  report: RestoredTable,
): void {
  if (rows.length === 0) return;
  const rule = table.rule;
  const at = snapshot.compactAt;
  // The saved tier's layout (dense-codec.ts): this store's tier takes it if it has none yet.
  const words = s.compact?.stateWords ?? (at?.words === 1 && denseRule(rule) ? 1 : STATE_WORDS);
  const buckets = s.compact?.buckets ?? CompactTable.bucketsFor(s.budget.compactBudget, words);
  const why =
    at === undefined
      ? "the file does not say where they were (an older version)"
      : !Number.isFinite(s.budget.maxKeys) ||
          !compactable(rule) ||
          s.budget.compactBudget < CompactTable.bytesFor(1, words)
        ? "this store has no compact tier for the rule"
        : buckets !== at.buckets || words !== (at.words ?? STATE_WORDS)
          ? `this store's compact tier has ${buckets} buckets, the saved one ${at.buckets} (\`maxKeys\` or \`maxBytes\` changed)`
          : table.index !== at.index
            ? "the rule has another place in the compact tier (bound in another order, or bound before the restore)"
            : undefined;
  let summarised = 0;
  let unfit = 0;
  for (const [h1, h2, , , bucket, record, returning] of rows) {
    if (!(recordFreshAt(rule, record) > t)) {
      report.expired++;
      continue;
    }
    if (why !== undefined || bucket === undefined) {
      summarise(s, table, h1, h2, record, t);
      summarised++;
      continue;
    }
    s.compact ??= new CompactTable(buckets, words);
    const compact = s.compact;
    const slot = compact.claimIn(bucket, table.index, h1, h2, returning);
    pushedOut(s, compact, table, t);
    if (!writeState(rule, record, compact.words, compact.stateIndex(slot), compact.stateWords)) {
      // A state the dense layout cannot hold exactly (a count past twice the limit): summarised.
      compact.remove(slot);
      summarise(s, table, h1, h2, record, t);
      unfit++;
      continue;
    }
    table.compactSize++;
    report.exact++;
  }
  if (unfit > 0) {
    report.summarised += unfit;
    report.reasons.push(
      `${unfit} compact records were summarised: their state does not fit this tier's one-word slots`,
    );
  }
  if (summarised > 0) {
    report.summarised += summarised;
    report.reasons.push(`${summarised} compact records were summarised: ${why}`);
  }
}

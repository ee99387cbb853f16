/**
 * A restored table's records moved into a bound table: each key back in its tier (its `Map`
 * segment, its compact bucket), the summary at its width, and what does not fit summarised,
 * with the reasons in the restore report.
 */
import { blocksBeside } from "../../core/block.ts";
import { type CompiledRule, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import { BUCKET_SLOTS, CompactTable } from "../compact/compact-table.ts";
import { fitsCompact, readState, writeState, writtenExactly } from "../compact/dense-codec.ts";
import { STATE_WORDS } from "../compact/state-codec.ts";
import { Approx } from "./approx.ts";
import { compactFor } from "./compact-tier.ts";
import { frameFor } from "./pack-frame.ts";
import { restorable } from "./restore-check.ts";
import type { RestoredTable } from "./restore-report.ts";
import { Sketch } from "./sketch.ts";
import type { TableSnapshot } from "./snapshot.ts";
import { now, type StoreState } from "./store-state.ts";
import { summarise } from "./summarise.ts";
import type { SummaryFilter } from "./summary-filter.ts";
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
  const rows: Array<[number, number, number, number, number | undefined, RuleRecord, number]> = [];
  for (const [h1, h2, w0, w1, bucket, flags] of snapshot.compact ?? []) {
    scratch[0] = w0 as number;
    scratch[1] = w1 as number;
    const record = readState(rule, scratch, 0, STATE_WORDS);
    if (!sane(record)) {
      refuse(`a compact record (fingerprint ${h1}) does not fit the rule's layout`);
      return;
    }
    rows.push([h1 as number, h2 as number, w0 as number, w1 as number, bucket, record, flags ?? 0]);
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
  const bounds = new Set(snapshot.bounds ?? []);
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
      rate !== undefined
        ? readBack(s, key, record as RuleRecord, rate, rule)
        : bounds.has(key)
          ? new Approx(record as RuleRecord, 0, 0, rule, true) // a bound: its decisions stay approximate
          : record,
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
  const freshAt = (table.sketch as Sketch).freshAt;
  const kept = s.filtered.get(table.id);
  const known: [SummaryFilter<string>, number] | undefined =
    s.savedFilters.get(table.id) ?? (kept !== undefined && s.filter !== undefined ? [s.filter, kept] : undefined);
  if (kept === table.index) {
    // The loaded filter places this table's keys where it did.
  } else if (known !== undefined && table.savedFilter === undefined) {
    // The saved filter knows the cells' keys, at the saved index (of another size, or index).
    table.savedFilter = known[0];
    table.savedFilterIndex = known[1];
    table.savedFilterUntil = freshAt;
  } else table.unfilteredUntil = Math.max(table.unfilteredUntil, freshAt);
  const width = (table.sketch as Sketch).width;
  if (width < from) {
    report.reasons.push(
      `its summary was folded from ${from} to ${width} cells per row to fit this store's \`maxBytes\` or \`sketchWidth\` (more keys may be over-counted, none under)`,
    );
  }
}

/**
 * Puts saved compact records back, exactly, whatever this store's size: into their own buckets
 * when this store's compact tier has the saved one's size and the table its saved index, else
 * where their fingerprints place them (compact-table.ts `claimRestored`: the bucket hash comes
 * from the key's text, which is not saved), where the table's lookups look until they are
 * fresh. Only what this tier has no room for is summarised (a smaller store), as an eviction
 * would.
 */
function adoptCompact(
  s: StoreState,
  table: Table,
  snapshot: TableSnapshot,
  rows: Array<[number, number, number, number, number | undefined, RuleRecord, number]>,
  t: number,
  report: RestoredTable,
): void {
  if (rows.length === 0) return;
  const rule = table.rule;
  const at = snapshot.compactAt;
  const compact = restoredTier(s, table, t);
  const why = compact === undefined ? "this store has no compact tier for the rule" : undefined;
  const inPlace =
    compact !== undefined &&
    at !== undefined &&
    compact.buckets === at.buckets &&
    compact.stateWords === (at.words ?? STATE_WORDS) &&
    table.index === at.index;
  let summarised = 0;
  let unfit = 0;
  let moved = 0;
  // A packed composite's slots are written within the table's frame (moved now, before any claim).
  const frame = compact === undefined ? undefined : frameFor(s, table, t);
  for (const [h1, h2, , , bucket, record, flags] of rows) {
    const returning = (flags & 1) !== 0;
    const freshAt = recordFreshAt(rule, record);
    if (!(freshAt > t)) {
      report.expired++;
      continue;
    }
    if (compact === undefined) {
      summarise(s, table, h1, h2, record, t);
      summarised++;
      continue;
    }
    const placed = inPlace && bucket !== undefined;
    const slot = placed
      ? compact.claimIn(bucket, table.index, h1, h2, returning)
      : compact.claimRestored(table.index, h1, h2, returning);
    pushedOut(s, compact, table, t);
    if (!writeState(rule, record, compact.words, compact.stateIndex(slot), compact.stateWords, frame)) {
      // A state the dense layout cannot hold exactly (a count past twice the limit): summarised.
      compact.remove(slot);
      summarise(s, table, h1, h2, record, t);
      unfit++;
      continue;
    }
    // A bound stays one (and a record this tier holds only as a bound becomes one).
    const state = compact.stateIndex(slot);
    if ((flags & 2) !== 0 || !writtenExactly(rule, record, compact.words, state, compact.stateWords, frame)) {
      compact.markBound(slot);
    }
    // The saved bucket may itself be one a restore chose: lookups look there too until fresh.
    if (freshAt > table.restoredUntil) table.restoredUntil = freshAt;
    if (!placed) moved++;
    table.compactSize++;
    report.exact++;
  }
  if (moved > 0) {
    report.reasons.push(
      `${moved} compact records were placed by their fingerprints: this store's compact tier has another size or layout (\`maxKeys\` or \`maxBytes\` changed), or the rule another place in it`,
    );
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

/**
 * The compact tier restored records of `table` go into: the capped store's own (created or
 * widened as an eviction would, compact-tier.ts), or in an uncapped store one sized for every
 * compact record the snapshot carries (`s.restoreRows`); undefined when the rule's records
 * never fit one, or the budget holds no bucket.
 */
function restoredTier(s: StoreState, table: Table, t: number): CompactTable | undefined {
  if (table.index === 0 || !fitsCompact(table.rule)) return undefined;
  if (Number.isFinite(s.budget.maxKeys)) return compactFor(s, table, t);
  s.compact ??= new CompactTable(Math.max(1, Math.ceil(s.restoreRows / (BUCKET_SLOTS / 2))));
  return s.compact;
}

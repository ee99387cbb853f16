/**
 * A MemoryStore's state as text and back: every table's tiers as they are held (save-table.ts),
 * the filter of summarised keys with the seed, and restores that give each key its own state
 * back once its rule is bound (adopt.ts).
 */
import { systemClock } from "../../core/clock.ts";
import { adopt } from "./adopt.ts";
import { type RestoreReport, savedTable, sumReport } from "./restore-report.ts";
import { saveTable } from "./save-table.ts";
import { decodeSnapshot, encodeSnapshot, type TableSnapshot } from "./snapshot.ts";
import { now, type StoreState } from "./store-state.ts";
import { type SavedFilter, SummaryFilter } from "./summary-filter.ts";

/** Every table's records (and summary) as text (see `MemoryStore.snapshot`). */
export function snapshotOf(s: StoreState, savedAt: number = systemClock.now()): string {
  const filter = s.filter;
  // A waiting table's bits are in the filter only if they came with it.
  const tables: TableSnapshot[] = [...s.pending.values()].map((p) => {
    const { filterIndex, ...rest } = p;
    const kept = s.filtered.get(`${p.id}\u0000${p.shape}`);
    return filter !== undefined && kept !== undefined && kept === filterIndex ? p : rest;
  });
  const compact = s.compact;
  for (const table of s.tables.values()) {
    const saved = saveTable(table, compact, s.seed);
    // Cells restored without their keys' bits still matter: the next restore must not trust the filter for them.
    // Nor cells whose keys only a saved filter knows (it is not saved again).
    const t = now(table);
    if (
      filter !== undefined &&
      saved.sketch !== undefined &&
      !(t < table.unfilteredUntil) &&
      !(t < table.savedFilterUntil)
    ) {
      saved.filterIndex = table.index;
    }
    tables.push(saved);
  }
  return encodeSnapshot(
    tables,
    savedAt,
    filter?.save(s.seed, (id) => id),
  );
}

/** Loads a snapshot written by `snapshotOf` (see `MemoryStore.restore`); returns the number of records read. */
export function restoreText(s: StoreState, text: string): number {
  const { tables, filter } = decodeSnapshot(text);
  if (filter !== undefined) loadFilter(s, filter, tables);
  s.restoreRows = tables.reduce((n, t) => n + (t.compact?.length ?? 0), 0);
  let records = 0;
  for (const snapshot of tables) {
    const id = `${snapshot.id}\u0000${snapshot.shape}`;
    const saved = snapshot.records.length + (snapshot.compact?.length ?? 0);
    records += saved;
    const report = savedTable(snapshot.id, snapshot.shape, saved);
    s.restores.set(id, report);
    const table = s.tables.get(id);
    if (table === undefined) s.pending.set(id, snapshot);
    else adopt(s, table, snapshot, report);
  }
  return records;
}

/** What the restores did so far, per saved table (see `MemoryStore.restored`). */
export function restoredOf(s: StoreState): RestoreReport {
  const tables = [...s.restores.entries()].map(([id, entry]) => {
    const copy = { ...entry, reasons: [...entry.reasons] };
    if (copy.status !== "waiting") return copy;
    const prefix = id.slice(0, id.lastIndexOf("\u0000") + 1);
    const other = [...s.tables.values()].find(
      (t) => t.id.startsWith(prefix) && t.id.indexOf("\u0000", prefix.length) < 0,
    );
    copy.reasons.push(
      other === undefined
        ? "no rule of this name is bound: its records wait (and are saved again) until one is"
        : `the rule is bound with another shape (${other.rule.shape}): its algorithm or window changed, so its saved counts are not used and its keys start fresh`,
    );
    return copy;
  });
  return sumReport(tables);
}

/**
 * Takes a saved summary filter when this store has none in use yet, is of its size and can take
 * its seed: the restored tables that name their index in it are then read through it.
 */
function loadFilter(s: StoreState, saved: SavedFilter, tables: TableSnapshot[]): void {
  // An uncapped store has no filter budget: it takes the saved one's size (it summarises
  // nothing of its own, but what a restore could not place).
  const bits = Number.isFinite(s.budget.maxKeys) ? SummaryFilter.bitsFor(s.budget.filterBudget) : saved.bits;
  if (bits === 0 || (saved.seed !== s.seed && !s.unhashed())) return;
  const filter = new SummaryFilter<string>(saved.bits);
  if (!filter.load(saved, (id) => id)) return;
  s.seed = saved.seed;
  const owners = new Map<string, number>();
  for (const t of tables) if (t.filterIndex !== undefined) owners.set(`${t.id}\u0000${t.shape}`, t.filterIndex);
  if (bits === saved.bits && (s.filter === undefined || s.filter.joins === 0)) {
    s.filter = filter;
    for (const [id, index] of owners) s.filtered.set(id, index);
    return;
  }
  // Another size (a changed `maxKeys` or `maxBytes`): kept as it is, read-only, beside this
  // store's own filter, for the restored cells' keys (adopt.ts), until those cells are fresh.
  s.filter ??= new SummaryFilter<string>(bits);
  for (const [id, index] of owners) s.savedFilters.set(id, [filter, index]);
}

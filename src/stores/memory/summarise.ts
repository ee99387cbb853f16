/**
 * The last tier: per rule, an additive summary (sketch.ts) where what the exact tiers cannot hold
 * ends, conservatively, with a filter of the keys pushed into it (a key never summarised decides
 * fresh). All rules' summaries share one budget; the warning when they saturate.
 *
 * Rules in the narrow layout (aligned fixed windows, window-cells.ts) skip the filter: their
 * cells, added by conservative update, keep a never-seen key near zero on their own, at 4 bytes
 * a cell against the filter's 2 bytes a key plus float cells that saturate. Until a rule of
 * another layout needs the filter, they take its budget too (issue 34: 500 rules flooded at once
 * left each rule's float summary ~200 cells a row, every one full, and the filter, past its
 * capacity, let 3% of brand-new keys through to them); when one does, they fold back.
 */
import type { RuleRecord } from "../../core/rule.ts";
import { warn } from "../../core/warn.ts";
import type { Approx } from "./approx.ts";
import { DEPTH, narrowWindow, Sketch, sketchBytes } from "./sketch.ts";
import { now, type StoreState } from "./store-state.ts";
import { SummaryFilter } from "./summary-filter.ts";
import type { Table } from "./table.ts";

/** Adds `record` into `table`'s summary (creating it within the budget); a pin on the key ends. */
export function summarise(
  s: StoreState,
  table: Table,
  h1: number,
  h2: number,
  record: RuleRecord,
  t: number,
  approx?: Approx,
): void {
  s.summarised++;
  if (table.pins.size > 0 && table.pins.delete(h1 * 65536 + (h2 >>> 16))) s.pins--;
  table.sketch ??= newSketch(s, table);
  table.sketch.add(h1, h2, record, t, approx?.rate);
  if (narrowWindow(table.rule) !== undefined) {
    if (!s.warned && (s.summarised & 4095) === 0) checkSaturation(s, table.sketch, undefined, t);
    return;
  }
  // A store with no filter budget (uncapped) may still hold one, restored with cells: keys
  // summarised next to those cells (a restore's overflow) join it, or it would not hold them.
  if (s.filter === undefined) {
    const bits = SummaryFilter.bitsFor(s.budget.filterBudget);
    if (bits === 0) return;
    s.filter = new SummaryFilter<string>(bits);
    reclaim(s);
  }
  // The sketch's own fresh-at bounds what the key's cells hold (and so what its read-back needs).
  s.filter.add(table.id, table.index, h1, h2, table.sketch.freshAt, s.filterPast);
  if (!s.warned && (s.summarised & 4095) === 0) checkSaturation(s, table.sketch, s.filter, t);
}

/**
 * Whether `table`'s summary may hold the key (h1, h2): the filter holds it, or the filter cannot
 * tell (none yet, or cells restored from a snapshot, which saves no keys, still matter), or the
 * saved filter that came with restored cells holds it.
 */
export function mayHold(s: StoreState, table: Table, h1: number, h2: number, t: number): boolean {
  const filter = s.filter;
  return (
    filter === undefined ||
    narrowWindow(table.rule) !== undefined ||
    t < table.unfilteredUntil ||
    filter.mayHold(table.index, h1, h2) ||
    (t < table.savedFilterUntil && (table.savedFilter as SummaryFilter<string>).mayHold(table.savedFilterIndex, h1, h2))
  );
}

/**
 * Warns once (`SLUICE_STORE_SATURATED`) when a never-seen key is likely (over 1%) to be read
 * back over-counted: the summary filter past its capacity and the summary's cells mostly live.
 */
function checkSaturation(s: StoreState, sketch: Sketch, filter: SummaryFilter<string> | undefined, t: number): void {
  const bound = (filter?.errorBound ?? 1) * sketch.fill(t) ** DEPTH;
  if (!(bound > 0.01)) return;
  s.warned = true;
  warn(
    `MemoryStore: about ${(100 * bound).toFixed(1)}% of never-seen keys may now be refused as over-counted (stats().summaryErrorBound): ${s.summarised} records were pushed past \`maxKeys\` (${s.budget.maxKeys}) into ${s.budget.maxBytes} bytes of compact tier, filter and summaries; raise \`maxBytes\` (or \`maxKeys\`) so that honest clients keep passing`,
    "SLUICE_STORE_SATURATED",
  );
}

/**
 * A summary for `table`, as wide as the store's summary budget allows once every other rule's
 * summary is counted; the widest others fold in half (conservatively) to make room, so 1 rule
 * or 1,000 share the same bytes.
 */
export function newSketch(s: StoreState, table: Table): Sketch {
  const rule = table.rule;
  if (narrowWindow(rule) !== undefined) return newNarrow(s, rule);
  const room = summaryRoom(s, rule);
  const budget = room.bytes;
  let width = Math.max(1, room.width);
  while (width > 1 && sketchBytes(rule, width) > budget) width /= 2;
  const others = () => {
    let bytes = 0;
    for (const other of s.tables.values()) bytes += other.sketch?.bytes ?? 0;
    return bytes;
  };
  let used = others();
  while (used + sketchBytes(rule, width) > budget) {
    let widest: Table | undefined;
    for (const other of s.tables.values()) {
      if (
        other.sketch !== undefined &&
        other.sketch.width > 1 &&
        (widest === undefined || other.sketch.bytes > (widest.sketch as Sketch).bytes)
      ) {
        widest = other;
      }
    }
    const need = sketchBytes(rule, width);
    if (widest !== undefined && (widest.sketch as Sketch).bytes >= need) (widest.sketch as Sketch).fold(now(widest));
    else if (width > 1) width /= 2;
    else break; // every summary is one cell per row: the budget is exceeded by at most a cell per rule
    used = others();
  }
  return new Sketch(rule, width);
}

/**
 * The widest row and the bytes all summaries together may reach when `rule`'s is made (or
 * restored): the summaries' budget; for a narrow one, the filter's too while there is no filter.
 */
export function summaryRoom(s: StoreState, rule: Table["rule"]): { width: number; bytes: number } {
  if (narrowWindow(rule) === undefined) return { width: s.budget.sketchWidth, bytes: s.budget.summaryBudget };
  return {
    width: s.budget.narrowWidth,
    bytes: s.budget.summaryBudget + (s.filter === undefined ? s.budget.filterBudget : 0),
  };
}

/**
 * Folds the widest summaries (conservatively) until all of them fit the summaries' own budget
 * again: the filter was just created, and narrow summaries had taken its bytes.
 */
function reclaim(s: StoreState): void {
  for (;;) {
    let used = 0;
    let widest: Sketch | undefined;
    let owner: Table | undefined;
    for (const table of s.tables.values()) {
      const sketch = table.sketch;
      if (sketch === undefined) continue;
      used += sketch.bytes;
      if (sketch.width > 1 && (widest === undefined || sketch.bytes > widest.bytes)) {
        widest = sketch;
        owner = table;
      }
    }
    if (used <= s.budget.summaryBudget || widest === undefined) return;
    widest.fold(now(owner as Table));
  }
}

/**
 * A narrow summary for `rule`: an even share of what the float summaries leave of the room
 * (narrow rows take any width). When it does not fit, the wider narrow summaries shrink to the
 * share of a quarter more rules than there are, so that a run of new rules shrinks them once
 * every quarter, not once each.
 */
function newNarrow(s: StoreState, rule: Table["rule"]): Sketch {
  const room = summaryRoom(s, rule);
  const unit = sketchBytes(rule, 1);
  const narrows: Sketch[] = [];
  let floatBytes = 0;
  for (const other of s.tables.values()) {
    const sketch = other.sketch;
    if (sketch === undefined) continue;
    if (sketch.unfiltered) narrows.push(sketch);
    else floatBytes += sketch.bytes;
  }
  const avail = room.bytes - floatBytes;
  const share = (rules: number) => Math.max(1, Math.min(room.width, Math.floor(avail / rules / unit)));
  const narrowBytes = () => narrows.reduce((sum, sketch) => sum + sketch.bytes, 0);
  let width = share(narrows.length + 1);
  if (narrowBytes() + width * unit > avail) {
    const slack = share(Math.ceil((narrows.length + 1) * 1.25));
    for (const sketch of narrows) if (sketch.width > slack) sketch.shrink(slack);
    width = Math.max(1, Math.min(width, Math.floor((avail - narrowBytes()) / unit)));
  }
  return new Sketch(rule, width);
}

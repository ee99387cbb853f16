/**
 * The last tier: per rule, an additive summary (sketch.ts) where what the exact tiers cannot hold
 * ends, conservatively, with a filter of the keys pushed into it (a key never summarised decides
 * fresh). All rules' summaries share one budget; the warning when they saturate.
 */
import type { RuleRecord } from "../../core/rule.ts";
import { warn } from "../../core/warn.ts";
import type { Approx } from "./approx.ts";
import { DEPTH, Sketch, sketchBytes } from "./sketch.ts";
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
  // A store with no filter budget (uncapped) may still hold one, restored with cells: keys
  // summarised next to those cells (a restore's overflow) join it, or it would not hold them.
  if (s.filter === undefined) {
    const bits = SummaryFilter.bitsFor(s.budget.filterBudget);
    if (bits === 0) return;
    s.filter = new SummaryFilter<string>(bits);
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
  const hold =
    filter === undefined ||
    t < table.unfilteredUntil ||
    filter.mayHold(table.index, h1, h2) ||
    (t < table.savedFilterUntil &&
      (table.savedFilter as SummaryFilter<string>).mayHold(table.savedFilterIndex, h1, h2));
  const sketch = table.sketch;
  if (hold && sketch !== undefined) {
    // Called after `present` found the key's rows: how often keys come back to full rows.
    sketch.noteReadBack(t);
    if (!s.warned && (sketch.reads & 63) === 0) checkSaturation(s, sketch, filter, t);
  }
  return hold;
}

/**
 * The chance (0..1) that an honest request reaching `sketch`'s summary is refused for want of
 * room: a key read back to rows that all refuse (measured over recent lookups), or a key never
 * summarised let through by the filter (`through`: its false positives) to such rows.
 */
export function errorBound(sketch: Sketch, through: number, t: number, sample = 4096): number {
  return Math.max(sketch.readBackBound(), through * sketch.full(t, sample) ** DEPTH);
}

/**
 * Warns once (`SLUICE_STORE_SATURATED`) when honest requests are likely (over 1%) to be refused
 * for want of room (`errorBound`).
 */
function checkSaturation(s: StoreState, sketch: Sketch, filter: SummaryFilter<string> | undefined, t: number): void {
  const bound = errorBound(sketch, filter?.errorBound ?? 1, t, 1024);
  if (!(bound > 0.01)) return;
  s.warned = true;
  warn(
    `MemoryStore: about ${(100 * bound).toFixed(1)}% of requests past the exact tiers may now be refused for want of room (stats().summaryErrorBound): ${s.summarised} records were pushed past \`maxKeys\` (${s.budget.maxKeys}) into ${s.budget.maxBytes} bytes of compact tier, filter and summaries; raise \`maxBytes\` (or \`maxKeys\`) so that honest clients keep passing`,
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
  let width = Math.max(1, s.budget.sketchWidth);
  while (width > 1 && sketchBytes(rule, width) > s.budget.summaryBudget) width /= 2;
  const others = () => {
    let bytes = 0;
    for (const other of s.tables.values()) bytes += other.sketch?.bytes ?? 0;
    return bytes;
  };
  let used = others();
  while (used + sketchBytes(rule, width) > s.budget.summaryBudget) {
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

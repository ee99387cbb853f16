/**
 * Pins: a key reset while its rule's summary may hold it is pinned fresh (by fingerprint) until
 * what the summary holds for it has expired, so "forget this key" is exact. Pins are bounded
 * across all rules; past the bound the most pinned table's oldest goes (that key then reads its
 * summary again: over-counted, never under).
 */
import type { CompactTable } from "../compact/compact-table.ts";
import type { StoreState } from "./store-state.ts";
import type { Table } from "./table.ts";

/** Forgets `key` of `table` (at `t` of its clock) in every tier; a key its summary may hold is pinned. */
export function resetKey(s: StoreState, table: Table, key: string, t: number): void {
  table.expire(t); // rotate first, so a pending rotation does not drop what follows
  if (table.blocks?.delete(key) && table.blocks.size === 0) table.blocks = undefined;
  if (table.delete(key)) s.size--;
  if (table.index === 0 && table.sketch === undefined) return;
  const h = s.hash(key);
  const slot = s.compact === undefined ? -1 : s.compact.find(table.index, h, t < table.restoredUntil);
  if (slot >= 0) {
    (s.compact as CompactTable).remove(slot);
    table.compactSize--;
  }
  // A key summarised would be read back over-counted: it is pinned fresh until what the
  // summary holds for it has expired, so "forget this key" is exact.
  const sketch = table.sketch;
  if (sketch?.present(h[0] as number, h[1] as number, t)) {
    pin(s, table, h[0] as number, h[1] as number, sketch.earliestEmpty());
  }
}

/** Whether a summarised key was reset and its summary is to be ignored until its pin runs out. */
export function pinned(s: StoreState, table: Table, h1: number, h2: number, t: number): boolean {
  if (table.pins.size === 0) return false;
  const id = h1 * 65536 + (h2 >>> 16);
  const until = table.pins.get(id);
  if (until === undefined) return false;
  if (t < until) return true;
  table.pins.delete(id);
  s.pins--;
  return false;
}

/** Pins a reset key fresh until `until`; the oldest pin of the most pinned table goes when there are too many. */
function pin(s: StoreState, table: Table, h1: number, h2: number, until: number): void {
  const id = h1 * 65536 + (h2 >>> 16);
  if (table.pins.delete(id)) s.pins--;
  if (s.pins >= s.budget.maxPins) {
    let most = table;
    for (const other of s.tables.values()) if (other.pins.size > most.pins.size) most = other;
    const oldest = most.pins.keys().next();
    if (oldest.done !== true) {
      most.pins.delete(oldest.value);
      s.pins--;
      s.pinsDropped++;
    }
  }
  table.pin(id, until);
  s.pins++;
}

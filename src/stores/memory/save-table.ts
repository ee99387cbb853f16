/**
 * One table of a MemoryStore as it goes into a snapshot: every tier as it is held, so a restore
 * gives each key its own state back (issue 34: a table whose records were all in the compact
 * tier was saved with a one-cell summary, and every key read back full).
 */
import type { CompactTable } from "../compact/compact-table.ts";
import { readState, writeState } from "../compact/dense-codec.ts";
import { STATE_WORDS } from "../compact/state-codec.ts";
import { Approx } from "./approx.ts";
import type { TableSnapshot } from "./snapshot.ts";
import type { Table } from "./table.ts";

/**
 * `table` as saved: its `Map` records oldest first with the protected segment's count (a key
 * read back from a summary with its debts), its compact records with their bucket, the table's
 * compact index and the tier's size, its summary at its own width, its blocks, and the store's
 * hash `seed` whenever fingerprints or cells travel.
 */
export function saveTable(table: Table, compact: CompactTable | undefined, seed: number): TableSnapshot {
  const sep = table.id.lastIndexOf("\u0000");
  const records: TableSnapshot["records"] = [];
  let kept = 0;
  let readBack = false;
  const bounds: string[] = [];
  for (const [key, record, protectedOne] of table.entries()) {
    // A bound read back from a compact slot travels as its record, named in `bounds`.
    if (record instanceof Approx && record.bound) {
      records.push([key, record.own]);
      bounds.push(key);
    } else if (record instanceof Approx) {
      // A key read back from the summary travels as it is held: what it took since, and its debts.
      records.push([key, record.own, [...record.rate]]);
      readBack = true;
    } else records.push([key, record]);
    // Protected records come last (entries() yields probation first).
    if (protectedOne) kept++;
  }
  const rows: number[][] = [];
  if (compact !== undefined && table.compactSize > 0) {
    // Rows carry the two-word form whatever the layout (the file does not depend on it).
    const two = compact.stateWords === STATE_WORDS ? compact.words : new Float64Array(STATE_WORDS);
    compact.forEach(table.index, (slot, h1, h2) => {
      let at = compact.stateIndex(slot);
      if (two !== compact.words) {
        const record = readState(table.rule, compact.words, at, 1, table.frame);
        writeState(table.rule, record, two, 0, STATE_WORDS, table.frame);
        at = 0;
      }
      const row = [h1, h2, two[at] as number, two[at + 1] as number, compact.bucketOf(slot)];
      // 1: a returning key's, 2: a bound of the key's state (decisions from it are approximate).
      const flags = (compact.returningAt(slot) ? 1 : 0) | (compact.boundAt(slot) ? 2 : 0);
      if (flags !== 0) row.push(flags);
      rows.push(row);
    });
    // forEach visits each bucket newest first; a restore appends oldest first, as they came.
    rows.reverse();
  }
  const sketch = table.sketch;
  return {
    id: table.id.slice(0, sep),
    shape: table.id.slice(sep + 1),
    records,
    ...(kept > 0 ? { protected: kept } : {}),
    ...(bounds.length > 0 ? { bounds } : {}),
    ...(rows.length > 0
      ? {
          compact: rows,
          compactAt: {
            index: table.index,
            buckets: (compact as CompactTable).buckets,
            ...((compact as CompactTable).stateWords === 1 ? { words: 1 } : {}),
          },
        }
      : {}),
    ...(rows.length > 0 || sketch !== undefined || readBack ? { seed } : {}),
    ...(table.blocks !== undefined ? { blocks: [...table.blocks] } : {}),
    ...(sketch !== undefined ? { sketch: { width: sketch.width, seed, cells: sketch.toBase64() } } : {}),
  };
}

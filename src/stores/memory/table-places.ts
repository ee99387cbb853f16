/**
 * The life of a MemoryStore's tables: a place (index) in the compact tier, dropped when unbound
 * and quiet, swept of what has become fresh.
 */
import { MAX_TABLE_INDEX } from "../compact/compact-table.ts";
import { unblock } from "./blocks.ts";
import { now, type StoreState, SWEEP_EVERY } from "./store-state.ts";
import type { Table } from "./table.ts";

/**
 * Gives `table` its index in the compact tier: `wanted` (the index a restored table had, so
 * its compact records go back to their buckets: a key's bucket mixes the index in) when it is
 * free, else a free one.
 */
export function placeTable(s: StoreState, table: Table, wanted: number | undefined): void {
  const byIndex = s.byIndex;
  if (wanted !== undefined && wanted <= MAX_TABLE_INDEX && byIndex[wanted] === undefined) {
    for (let i = byIndex.length; i < wanted; i++) {
      s.freeIndices.push(i);
      byIndex.push(undefined);
    }
    const free = s.freeIndices.indexOf(wanted);
    if (free >= 0) s.freeIndices.splice(free, 1);
    table.index = wanted;
    byIndex[wanted] = table;
    return;
  }
  const free = s.freeIndices.pop();
  if (free !== undefined) {
    table.index = free;
    byIndex[free] = table;
  } else if (byIndex.length <= MAX_TABLE_INDEX) {
    table.index = byIndex.length;
    byIndex.push(table);
  }
}

/** Forgets a table and everything it holds in every tier. */
export function dropTable(s: StoreState, id: string, table: Table): void {
  s.size -= table.size;
  s.tables.delete(id);
  s.filter?.forget(id);
  s.pins -= table.pins.size;
  if (table.index > 0) {
    const compact = s.compact;
    if (compact !== undefined && table.compactSize > 0) compact.forEach(table.index, (slot) => compact.remove(slot));
    s.byIndex[table.index] = undefined;
    s.freeIndices.push(table.index);
  }
}

/**
 * A binding of `table` (store id `id`) went. A table nobody binds any more keeps its records
 * until they are fresh (a sweep then drops it), as Redis keys outlive their rule until they
 * expire: a rule removed and added back, or a shape changed and changed back, finds the same
 * state on every store. Sweeps run on the clocks of live bindings; with none left on this
 * table's clock, nothing would ever sweep it, so it goes now.
 */
export function releaseTable(s: StoreState, id: string, table: Table): void {
  if (--table.refs > 0) return;
  for (const other of s.tables.values()) {
    if (other.refs > 0 && other.clock === table.clock) {
      // Kept until quiet, then dropped by a later release or sweep: a stream of rules added
      // and removed (Envoy overrides) holds those of the last horizon, not of the last sweep.
      table.released(now(table));
      s.released.push(table);
      reap(s, now(table), table.clock);
      return;
    }
  }
  if (s.tables.get(id) === table) dropTable(s, id, table);
}

/**
 * Drops released tables that have become quiet by `now`, oldest release first. Only tables
 * whose records are all in the `Map` tier: what the other tiers hold goes with the sweep.
 */
function reap(s: StoreState, now: number, clock: unknown): void {
  const released = s.released;
  let i = s.releasedHead;
  for (; i < released.length; i++) {
    const table = released[i] as Table;
    if (table.refs > 0 || s.tables.get(table.id) !== table) continue; // bound again, or gone
    if (table.clock !== clock) continue;
    if (!(now >= table.quietAt)) break;
    if (table.compactSize === 0 && table.sketch === undefined && table.pins.size === 0 && table.blocks === undefined) {
      dropTable(s, table.id, table);
    }
  }
  s.releasedHead = i;
  if (i > 1024 && i * 2 > released.length) {
    released.splice(0, i);
    s.releasedHead = 0;
  }
}

/** Lets every table on `clock` drop what is fresh at `now` (instants of other clocks don't compare). */
export function sweep(s: StoreState, now: number, clock: unknown): void {
  s.sweepIn = SWEEP_EVERY;
  let size = 0;
  for (const [id, table] of s.tables) {
    if (table.clock === clock) {
      table.expire(now);
      unblock(table, now);
      // A summary whose every cell has stopped mattering is freed (an idle rule holds nothing).
      if (table.sketch !== undefined && !(table.sketch.freshAt > now)) table.sketch = undefined;
    }
    // An unbound table whose records are all gone is dropped with its summary.
    if (
      table.refs === 0 &&
      table.size === 0 &&
      table.compactSize === 0 &&
      table.sketch === undefined &&
      table.blocks === undefined
    ) {
      dropTable(s, id, table);
    } else size += table.size;
  }
  s.size = size;
}

/** What a MemoryStore reports to operators: each tier's fill and the summaries' error bound, per store and per rule. */
import { now, type StoreState } from "./store-state.ts";
import { errorBound } from "./summarise.ts";

/** What `stats()` reports. */
export interface MemoryStoreStats {
  /** Exact records held now in the `Map` tier, across all rules. */
  keys: number;
  /** The cap on the `Map` tier (Infinity when none). */
  maxKeys: number;
  /** The budget past `maxKeys` (Infinity when uncapped). */
  maxBytes: number;
  /** Records pushed out of the `Map` tier because of `maxKeys`. */
  evicted: number;
  /**
   * Of `keys`, those in the protected segment: used again while held (or back from the compact
   * tier). Evictions take the other records (probation: keys seen once) first.
   */
  protectedKeys: number;
  /** Records moved into the protected segment. */
  promoted: number;
  /** Records read back from the compact tier into the `Map` tier (keys that came back after being pushed out). */
  compactHits: number;
  /** Records held exactly in the compact tier. */
  compactKeys: number;
  /** Slots of the compact tier (0 until first needed). */
  compactCapacity: number;
  /** Bytes of the compact tier. */
  compactBytes: number;
  /** Records pushed out of the compact tier into a summary. */
  compactEvicted: number;
  /** Records added into a summary (from either tier). */
  summarised: number;
  /** Decisions read back from a summary (they carry `approximate: true`). */
  approximate: number;
  /** Of those, denials: at most this many requests were refused that exact state might have allowed. */
  refused: number;
  /** Bytes held by summaries (all rules together, within `maxBytes`). */
  sketchBytes: number;
  /** Bytes of the filter of keys pushed into a summary (within `maxBytes`; 0 until first needed). */
  filterBytes: number;
  /**
   * Keys joined into the filter since its older generation was last emptied (a key pushed into
   * a summary twice counts twice); past 1 key per 16 bits of a generation, false positives grow.
   */
  filterKeys: number;
  /**
   * The filter's own false-positive rate: the chance that a key never summarised passes the
   * filter (estimated from its joins; 0 until it is first needed). Past 1%, `maxBytes` is short.
   */
  filterErrorBound: number;
  /**
   * The summaries' error bound, the worst rule's: the chance that an honest request reaching a
   * summary is refused for want of room. The larger of the share of recent lookups read back
   * to rows that all refuse (a key pushed out and coming back; also counts keys that spent
   * their own limit, so it bounds from above) and, for keys never summarised, the filter's
   * false-positive rate times the share of full cells to the power of the rows. Past 1% the
   * store warns once (SLUICE_STORE_SATURATED): raise `maxBytes`.
   */
  summaryErrorBound: number;
  /** Keys reset while summarised, pinned fresh until their summarised state expires. */
  pins: number;
  /** Pins given up for room (the key then reads its summary again: over-counted, never under). */
  pinsDropped: number;
}

/** What {@link MemoryStore.keysOf} reports for one rule identity. */
export interface RuleKeys {
  /** Keys whose state is held exactly (the `Map` tier and the compact tier), across the rule's shapes. */
  keys: number;
  /**
   * Whether some of the rule's keys were pushed into its summary, which cannot count keys (its
   * cells are shared): `keys` is then a lower bound.
   */
  summarised: boolean;
}

/** Counters for logs and metrics (see {@link MemoryStoreStats}). */
export function statsOf(s: StoreState): MemoryStoreStats {
  let sketchBytes = 0;
  let bound = 0;
  let protectedKeys = 0;
  let promoted = 0;
  for (const table of s.tables.values()) {
    protectedKeys += table.protectedSize;
    promoted += table.promoted;
    const sketch = table.sketch;
    if (sketch === undefined) continue;
    sketchBytes += sketch.bytes;
    // The chance a never-seen key is let through to the cells: every key while restored cells
    // are unfiltered; else the filter's false positives, and a saved filter's for restored cells.
    const t = now(table);
    const through =
      t < table.unfilteredUntil
        ? 1
        : Math.min(
            1,
            (s.filter?.errorBound ?? 1) + (t < table.savedFilterUntil ? (table.savedFilter?.errorBound ?? 1) : 0),
          );
    bound = Math.max(bound, errorBound(sketch, through, t));
  }
  return {
    keys: s.countRecords(),
    maxKeys: s.budget.maxKeys,
    maxBytes: s.budget.maxBytes,
    evicted: s.evicted,
    protectedKeys,
    promoted,
    compactHits: s.compactHits,
    compactKeys: s.compact?.size ?? 0,
    compactCapacity: s.compact?.capacity ?? 0,
    compactBytes: s.compact?.bytes ?? 0,
    compactEvicted: s.compact?.evicted ?? 0,
    summarised: s.summarised,
    approximate: s.approximate,
    refused: s.refused,
    sketchBytes,
    filterBytes: s.filter?.bytes ?? 0,
    filterKeys: s.filter?.joins ?? 0,
    filterErrorBound: s.filter?.errorBound ?? 0,
    summaryErrorBound: bound,
    pins: s.pins,
    pinsDropped: s.pinsDropped,
  };
}

/** The keys held for rule identity `id` (see `MemoryStore.keysOf`): a walk of the tables, not of the keys. */
export function keysOf(s: StoreState, id: string): RuleKeys {
  let keys = 0;
  let summarised = false;
  for (const [tableId, table] of s.tables) {
    if (tableId.slice(0, tableId.lastIndexOf("\u0000")) !== id) continue;
    keys += table.size + table.compactSize;
    if (table.sketch !== undefined) summarised = true;
  }
  return { keys, summarised };
}

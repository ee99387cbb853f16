/**
 * What a MemoryStore holds across its rules: the tables, the compact tier and the filter they
 * share, what restores left waiting, and the counters `stats()` reports. The store's parts
 * (victim choice, summaries, pins, snapshots, the decide path) are functions of this state.
 */
import { systemClock } from "../../core/clock.ts";
import type { CompactTable } from "../compact/compact-table.ts";
import { fingerprint } from "../compact/fingerprint.ts";
import type { RestoredTable } from "./restore-report.ts";
import type { TableSnapshot } from "./snapshot.ts";
import type { TierBudget } from "./store-options.ts";
import type { SummaryFilter } from "./summary-filter.ts";
import type { Table } from "./table.ts";

/** Checks between sweeps of every table (see `sweep`). */
export const SWEEP_EVERY = 4096;

/** The state of one MemoryStore. */
export class StoreState {
  /** What each tier may hold (from the options; the seed below starts as its `seed`). */
  readonly budget: TierBudget;
  /** The hash seed (a restore may take the saved one while nothing is hashed yet). */
  seed: number;
  /** Tables by rule id and shape: a record is only ever read under the shape it was written for. */
  readonly tables = new Map<string, Table>();
  /** Tables by compact index (index 0 unused). */
  readonly byIndex: Array<Table | undefined> = [undefined];
  /** Compact indices of dropped tables, for new ones (a stream of rules never runs out of them). */
  readonly freeIndices: number[] = [];
  /** Unbound tables in the order they lost their last binding, dropped once quiet (see `reap`). */
  released: Table[] = [];
  /** Where `released` starts (entries before it are done). */
  releasedHead = 0;
  /** The compact tier (created at the first record pushed into it). */
  compact: CompactTable | undefined = undefined;
  /** Which keys the summaries may hold (created with the first summarised key). */
  filter: SummaryFilter<string> | undefined = undefined;
  /** Restored tables (by id) whose keys' bits came with the loaded filter, at this saved index. */
  readonly filtered = new Map<string, number>();
  /**
   * Restored tables (by id) whose keys' bits came in a saved filter of another size than this
   * store's (or at another index): that filter, read-only, and the table's index in it.
   */
  readonly savedFilters = new Map<string, [SummaryFilter<string>, number]>();
  /** Compact records the last restored snapshot carries (an uncapped store sizes a tier for them). */
  restoreRows = 0;
  /** Restored tables waiting for their rule to be bound (by table id). */
  readonly pending = new Map<string, TableSnapshot>();
  /** What each restored table became (by table id), for `restored()`. */
  readonly restores = new Map<string, RestoredTable>();
  /** Records in the `Map` tier, as last counted (tables rotate generations out on their own). */
  size = 0;
  /** `rotations.count` when `size` was last counted from the tables. */
  countedAt = -1;
  /** Checks left until the next sweep. */
  sweepIn = SWEEP_EVERY;
  /** Records pushed out of the `Map` tier because of `maxKeys`. */
  evicted = 0;
  /** Records read back from the compact tier. */
  compactHits = 0;
  /** Records added into a summary. */
  summarised = 0;
  /** Decisions read back from a summary. */
  approximate = 0;
  /** Of those, denied checks. */
  refused = 0;
  /** Pins held, across all tables. */
  pins = 0;
  /** Pins given up for room. */
  pinsDropped = 0;
  /** The table holding the most records at the last scan (victim choice). */
  fullest: Table | undefined = undefined;
  /** Evictions left until the fullest table is looked for again. */
  scanIn = 0;
  /** Whether the saturation warning was emitted (once per store). */
  warned = false;
  /** The last key's fingerprint (see `hash`). */
  readonly h = new Uint32Array(3);

  constructor(budget: TierBudget) {
    this.budget = budget;
    this.seed = budget.seed;
  }

  /** The key's fingerprint, in `h` (overwritten by the next call). */
  hash(key: string): Uint32Array {
    fingerprint(this.seed, key, this.h);
    return this.h;
  }

  /** Exact records held now in the `Map` tier, counted from the tables. */
  countRecords(): number {
    let n = 0;
    for (const table of this.tables.values()) n += table.size;
    return n;
  }

  /**
   * Whether what table `id` joined into the filter up to `at` no longer matters on its clock (a
   * table restored but not bound yet still matters; a dropped one does not).
   */
  readonly filterPast = (id: string, at: number): boolean => {
    const table = this.tables.get(id);
    if (table !== undefined) return !(at > now(table));
    return !this.pending.has(id);
  };

  /** Whether nothing was hashed yet (a restored seed may then replace ours). */
  unhashed(): boolean {
    if (this.compact !== undefined && this.compact.size > 0) return false;
    for (const table of this.tables.values()) if (table.sketch !== undefined || table.pins.size > 0) return false;
    return true;
  }
}

/** The current instant of a table's clock (for a reset, which carries no `now`). */
export function now(table: Table): number {
  const clock = table.clock as { now(): number } | undefined;
  return clock === undefined ? systemClock.now() : clock.now();
}

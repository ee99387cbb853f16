/**
 * The in-process store: synchronous, so each decision is atomic within the JS thread. Each
 * (rule, key) has one record, decided by `decideRule`. Records that have become equivalent to
 * a fresh key are dropped without timers (see `Table`).
 *
 * Past `maxKeys` the store has three tiers under one memory budget (`maxBytes`) shared by all
 * rules: (1) the exact `Map` of records, at most `maxKeys`, a segmented LRU (table.ts: keys seen
 * once churn through probation, keys that come back stay protected, so a flood of one-shot
 * keys cannot push out returning ones); (2) a compact table of 24-byte slots
 * (a 48-bit key fingerprint and the state in two float64 words, src/stores/compact/) where
 * records pushed out of the `Map` stay exact; (3) per rule, an additive count-min-style summary
 * (sketch.ts) where what the compact table cannot hold ends, conservatively. A key read back
 * from the summary decides on the summary's estimate plus what it took since (its `own`
 * record); only `own` is ever added back, so the summary grows by real units only.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { Decision } from "../../algorithms/decision.ts";
import { markReadBack } from "../../core/ban.ts";
import { blockedAnswer, blocksBeside, costUnderBlock, underBlock } from "../../core/block.ts";
import { systemClock } from "../../core/clock.ts";
import { decideRule, type Operation, storesNewRecord } from "../../core/decide-rule.ts";
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { checkOptions } from "../../core/options.ts";
import {
  banState,
  type CompiledRule,
  createRecord,
  memberState,
  type RuleRecord,
  recordFreshAt,
} from "../../core/rule.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { warn } from "../../core/warn.ts";
import { CompactTable, MAX_TABLE_INDEX } from "../compact/compact-table.ts";
import { fingerprint, randomSeed } from "../compact/fingerprint.ts";
import { compactable, decodeRecord, encodeRecord, STATE_WORDS } from "../compact/state-codec.ts";
import { isRate, unitMs } from "../compact/summary-codec.ts";
import { Approx, oweUnits } from "./approx.ts";
import { restorable } from "./restore-check.ts";
import { type RestoredTable, type RestoreReport, savedTable, sumReport } from "./restore-report.ts";
import { saveTable } from "./save-table.ts";
import { DEPTH, Sketch, sketchBytes } from "./sketch.ts";
import { decodeSnapshot, encodeSnapshot, type TableSnapshot } from "./snapshot.ts";
import { type SavedFilter, SummaryFilter } from "./summary-filter.ts";
import { rotations, Table } from "./table.ts";

/** The names of {@link MemoryStoreOptions}, for every place that takes them (startClusterStore too). */
export const MEMORY_STORE_OPTIONS = [
  "maxKeys",
  "maxBytes",
  "sketchWidth",
  "seed",
] as const satisfies readonly (keyof MemoryStoreOptions)[];

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Hard cap on exact records in the `Map` tier, across all rules (default: no cap beyond fresh-state expiry). */
  maxKeys?: number;
  /**
   * Bytes for everything past `maxKeys`, across all rules: the summaries (1/16, or up to 1/6
   * when that is at most 64 KiB), then of the rest the compact tier (4/5) and the filter of the
   * keys the summaries hold (1/5). Default: 2,400 bytes per
   * `maxKeys`, between 64 KiB and 24 MiB. Given alone, `maxKeys` defaults to maxBytes / 1,000.
   */
  maxBytes?: number;
  /** Cells per summary row, at most (default: as many as the summary budget allows, up to 65536). */
  sketchWidth?: number;
  /** Hash seed (default: random). Fixed in tests so that a trace replays exactly. */
  seed?: number;
}

/** Checks between sweeps of every table (see `#sweep`). */
const SWEEP_EVERY = 4096;
/** Widest summary row. */
const MAX_WIDTH = 65536;

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
   * The summaries' error bound: the chance that a key never summarised is read back as
   * summarised (and so possibly over-counted): the filter's false-positive rate times the
   * fullest summary's share of live cells to the power of its rows.
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

/**
 * Keeps rate-limit state in this process.
 *
 * @example const store = new MemoryStore({ maxKeys: 100_000 }); createLimiter(spec, { store })
 */
export class MemoryStore implements Store {
  /** Checks return plain decisions, never promises. */
  readonly synchronous = true;
  /** Decides `penalty`, `block` and `get` (rate-limiter-flexible's calls). */
  readonly flexibleCalls = true;
  /** The hard cap on exact records in the `Map` tier (Infinity when none). */
  readonly maxKeys: number;
  /** The budget past `maxKeys` (Infinity when uncapped). */
  readonly maxBytes: number;
  readonly #sketchWidth: number;
  readonly #compactBudget: number;
  readonly #summaryBudget: number;
  readonly #filterBudget: number;
  readonly #maxPins: number;
  readonly #protectedCap: number;
  #seed: number;
  /** Tables by rule id and shape: a record is only ever read under the shape it was written for. */
  #tables = new Map<string, Table>();
  /** Tables by compact index (index 0 unused). */
  #byIndex: Array<Table | undefined> = [undefined];
  /** Compact indices of dropped tables, for new ones (a stream of rules never runs out of them). */
  #freeIndices: number[] = [];
  /** Unbound tables in the order they lost their last binding, dropped once quiet (see `#reap`). */
  #released: Table[] = [];
  /** Where `#released` starts (entries before it are done). */
  #releasedHead = 0;
  #compact: CompactTable | undefined = undefined;
  /** Which keys the summaries may hold (created with the first summarised key). */
  #filter: SummaryFilter<string> | undefined = undefined;
  /** Restored tables (by id) whose keys' bits came with the loaded filter, at this saved index. */
  #filtered = new Map<string, number>();
  /** Restored tables waiting for their rule to be bound (by table id). */
  #pending = new Map<string, TableSnapshot>();
  /** What each restored table became (by table id), for `restored()`. */
  #restores = new Map<string, RestoredTable>();
  #size = 0;
  /** `rotations.count` when `#size` was last counted from the tables. */
  #countedAt = -1;
  #sweepIn = SWEEP_EVERY;
  #evicted = 0;
  #compactHits = 0;
  #summarised = 0;
  #approximate = 0;
  #refused = 0;
  #pins = 0;
  #pinsDropped = 0;
  #fullest: Table | undefined = undefined;
  /** Whether the saturation warning was emitted (once per store). */
  #warned = false;
  #scanIn = 0;
  readonly #h = new Uint32Array(3);

  constructor(options: MemoryStoreOptions = {}) {
    checkOptions(options, "MemoryStore", MEMORY_STORE_OPTIONS);
    const { maxKeys, maxBytes, sketchWidth, seed } = options;
    for (const [name, value] of [
      ["maxKeys", maxKeys],
      ["maxBytes", maxBytes],
      ["sketchWidth", sketchWidth],
    ] as const) {
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
        throw new ArgumentError(`\`${name}\` must be a positive integer (got ${describeValue(value)})`);
      }
    }
    if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)) {
      throw new ArgumentError(`\`seed\` must be an integer from 0 to 2^32 - 1 (got ${describeValue(seed)})`);
    }
    this.maxKeys =
      maxKeys ?? (maxBytes === undefined ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(maxBytes / 1000)));
    this.maxBytes =
      maxBytes ??
      (maxKeys === undefined ? Number.POSITIVE_INFINITY : Math.min(24 * 2 ** 20, Math.max(65536, maxKeys * 2400)));
    // Under a large flood summary cells saturate while exact slots and filter bits stay useful:
    // at 24 MiB, 3,000,000 one-request keys refused 1.35% of honest requests with 2/3 compact,
    // 1/6 filter, 1/6 summaries; 0.29% with this (bench/memory.mjs --shapes). A small store keeps
    // a sixth for its summaries, where a few cells more keep keys apart.
    const capped = Number.isFinite(this.maxBytes);
    const summaries = Math.max(Math.floor(this.maxBytes / 16), Math.min(Math.floor(this.maxBytes / 6), 65536));
    const rest = capped ? this.maxBytes - summaries : this.maxBytes;
    this.#compactBudget = capped ? Math.floor((rest * 4) / 5) : rest;
    this.#filterBudget = capped ? rest - this.#compactBudget : 0;
    this.#summaryBudget = summaries;
    this.#sketchWidth = Math.min(MAX_WIDTH, sketchWidth ?? MAX_WIDTH);
    // A fifth of the Map tier stays for probation: room for new keys to prove they come back.
    this.#protectedCap = Number.isFinite(this.maxKeys) ? Math.floor(this.maxKeys * 0.8) : Number.POSITIVE_INFINITY;
    this.#maxPins = Number.isFinite(this.maxKeys) ? Math.max(16, Math.ceil(this.maxKeys / 8)) : 0;
    this.#seed = seed ?? randomSeed();
  }

  /** Exact records held now in the `Map` tier, across all rules. */
  get size(): number {
    let n = 0;
    for (const table of this.#tables.values()) n += table.size;
    return n;
  }

  /** How many records were pushed out of the `Map` tier because of `maxKeys`. */
  get evicted(): number {
    return this.#evicted;
  }

  /** Counters for logs and metrics. */
  stats(): MemoryStoreStats {
    let sketchBytes = 0;
    let bound = 0;
    let protectedKeys = 0;
    let promoted = 0;
    for (const table of this.#tables.values()) {
      protectedKeys += table.protectedSize;
      promoted += table.promoted;
      const sketch = table.sketch;
      if (sketch === undefined) continue;
      sketchBytes += sketch.bytes;
      bound = Math.max(bound, sketch.fill(now(table)) ** DEPTH);
    }
    return {
      keys: this.size,
      maxKeys: this.maxKeys,
      maxBytes: this.maxBytes,
      evicted: this.#evicted,
      protectedKeys,
      promoted,
      compactHits: this.#compactHits,
      compactKeys: this.#compact?.size ?? 0,
      compactCapacity: this.#compact?.capacity ?? 0,
      compactBytes: this.#compact?.bytes ?? 0,
      compactEvicted: this.#compact?.evicted ?? 0,
      summarised: this.#summarised,
      approximate: this.#approximate,
      refused: this.#refused,
      sketchBytes,
      filterBytes: this.#filter?.bytes ?? 0,
      filterKeys: this.#filter?.joins ?? 0,
      summaryErrorBound: bound * (this.#filter?.errorBound ?? 1),
      pins: this.#pins,
      pinsDropped: this.#pinsDropped,
    };
  }

  /**
   * The keys held for rule identity `id` (a binding's `id`: a limiter's or a service rule tier's),
   * for operators (the status page's per-tier counts). Each table keeps its own sizes, so this
   * walks the tables, not the keys. Keys whose state has just become fresh count until their
   * table next drops fresh records (at the latest one rule horizon later).
   */
  keysOf(id: string): RuleKeys {
    let keys = 0;
    let summarised = false;
    for (const [tableId, table] of this.#tables) {
      if (tableId.slice(0, tableId.lastIndexOf("\u0000")) !== id) continue;
      keys += table.size + table.compactSize;
      if (table.sketch !== undefined) summarised = true;
    }
    return { keys, summarised };
  }

  /** Binds a rule; it shares records with earlier bindings of the same id and shape. */
  bind(binding: RuleBinding): BoundRule {
    const { rule } = binding;
    const id = `${binding.id}\u0000${rule.shape}`;
    let table = this.#tables.get(id);
    if (table === undefined) {
      table = new Table(rule, id);
      table.protectedCap = this.#protectedCap;
      this.#tables.set(id, table);
      const restored = this.#pending.get(id);
      this.#placeTable(table, restored?.compactAt?.index);
      if (restored !== undefined) {
        this.#pending.delete(id);
        // Adopted at the binding's instant: its records and the cells they are summarised into
        // hold instants of this clock (the system clock's reading would shift every backlog).
        table.clock = binding.clock;
        this.#adopt(table, restored, this.#restores.get(id) ?? savedTable(restored.id, restored.shape, 0));
      }
    }
    table.rule = rule;
    if (table.sketch !== undefined) table.sketch.rule = rule;
    table.horizonMs = Math.max(table.horizonMs, rule.horizonMs);
    table.clock = binding.clock;
    table.refs++;
    table.quietAt = Number.POSITIVE_INFINITY;
    const bound = table;
    let released = false;
    return {
      check: (key, cost, now, op, at) => {
        const t = now === undefined ? systemClock.now() : now;
        if (--this.#sweepIn === 0) this.#sweep(t, bound.clock);
        if (op === "check" && bound.blocks === undefined) {
          // The hot path, tested first: a check of a live key is one Map lookup and one decision
          // (each further test of `op` against another name costs more than the lookup's hashing).
          const record = bound.get(key, t);
          if (record === undefined) return this.#miss(bound, key, cost, t, op, at);
          if (record instanceof Approx) return this.#decideApprox(bound, key, record, cost, t, op, at);
          return decideRule(bound.rule, record, t, cost, op, at);
        }
        // Blocks of a rule without a ban (core/block.ts): one field test while the rule has none.
        if (bound.blocks !== undefined || (op === "block" && blocksBeside(bound.rule))) {
          return this.#blockable(bound, key, cost, t, op, at);
        }
        if (op === "penalty" || op === "block") return this.#force(bound, key, cost, t, op);
        if (op !== "peek" && op !== "get") {
          // A live key is one Map lookup and one decision.
          const record = bound.get(key, t);
          if (record !== undefined) {
            if (record instanceof Approx) return this.#decideApprox(bound, key, record, cost, t, op, at);
            return decideRule(bound.rule, record, t, cost, op, at);
          }
        }
        return this.#miss(bound, key, cost, t, op, at);
      },
      reset: (key) => {
        const t = now(bound);
        bound.expire(t); // rotate first, so a pending rotation does not drop what follows
        if (bound.blocks?.delete(key) && bound.blocks.size === 0) bound.blocks = undefined;
        if (bound.delete(key)) this.#size--;
        if (bound.index === 0 && bound.sketch === undefined) return;
        const h = this.#hash(key);
        const slot = this.#compact === undefined ? -1 : this.#compact.find(bound.index, h);
        if (slot >= 0) {
          (this.#compact as CompactTable).remove(slot);
          bound.compactSize--;
        }
        // A key summarised would be read back over-counted: it is pinned fresh until what the
        // summary holds for it has expired, so "forget this key" is exact.
        const sketch = bound.sketch;
        if (sketch?.present(h[0] as number, h[1] as number, t)) {
          this.#pin(bound, h[0] as number, h[1] as number, sketch.earliestEmpty());
        }
      },
      release: () => {
        if (released) return;
        released = true;
        // A table nobody binds any more keeps its records until they are fresh (a sweep then
        // drops it), as Redis keys outlive their rule until they expire: a rule removed and
        // added back, or a shape changed and changed back, finds the same state on every store.
        // Sweeps run on the clocks of live bindings; with none left on this table's clock,
        // nothing would ever sweep it, so it goes now.
        if (--bound.refs > 0) return;
        for (const table of this.#tables.values()) {
          if (table.refs > 0 && table.clock === bound.clock) {
            // Kept until quiet, then dropped by a later release or sweep: a stream of rules added
            // and removed (Envoy overrides) holds those of the last horizon, not of the last sweep.
            bound.released(now(bound));
            this.#released.push(bound);
            this.#reap(now(bound), bound.clock);
            return;
          }
        }
        if (this.#tables.get(id) === bound) this.#drop(id, bound);
      },
    };
  }

  /**
   * Drops released tables that have become quiet by `now`, oldest release first. Only tables
   * whose records are all in the `Map` tier: what the other tiers hold goes with the sweep.
   */
  #reap(now: number, clock: unknown): void {
    const released = this.#released;
    let i = this.#releasedHead;
    for (; i < released.length; i++) {
      const table = released[i] as Table;
      if (table.refs > 0 || this.#tables.get(table.id) !== table) continue; // bound again, or gone
      if (table.clock !== clock) continue;
      if (!(now >= table.quietAt)) break;
      if (
        table.compactSize === 0 &&
        table.sketch === undefined &&
        table.pins.size === 0 &&
        table.blocks === undefined
      ) {
        this.#drop(table.id, table);
      }
    }
    this.#releasedHead = i;
    if (i > 1024 && i * 2 > released.length) {
      released.splice(0, i);
      this.#releasedHead = 0;
    }
  }

  /**
   * Gives `table` its index in the compact tier: `wanted` (the index a restored table had, so
   * its compact records go back to their buckets: a key's bucket mixes the index in) when it is
   * free, else a free one.
   */
  #placeTable(table: Table, wanted: number | undefined): void {
    const byIndex = this.#byIndex;
    if (wanted !== undefined && wanted <= MAX_TABLE_INDEX && byIndex[wanted] === undefined) {
      for (let i = byIndex.length; i < wanted; i++) {
        this.#freeIndices.push(i);
        byIndex.push(undefined);
      }
      const free = this.#freeIndices.indexOf(wanted);
      if (free >= 0) this.#freeIndices.splice(free, 1);
      table.index = wanted;
      byIndex[wanted] = table;
      return;
    }
    const free = this.#freeIndices.pop();
    if (free !== undefined) {
      table.index = free;
      byIndex[free] = table;
    } else if (byIndex.length <= MAX_TABLE_INDEX) {
      table.index = byIndex.length;
      byIndex.push(table);
    }
  }

  /** Forgets a table and everything it holds in every tier. */
  #drop(id: string, table: Table): void {
    this.#size -= table.size;
    this.#tables.delete(id);
    this.#filter?.forget(id);
    this.#pins -= table.pins.size;
    if (table.index > 0) {
      const compact = this.#compact;
      if (compact !== undefined && table.compactSize > 0) compact.forEach(table.index, (slot) => compact.remove(slot));
      this.#byIndex[table.index] = undefined;
      this.#freeIndices.push(table.index);
    }
  }

  /**
   * Every table's records (and summary) as text, for `restore` after a restart. Records hold
   * absolute instants, so counts survive exactly. Each tier travels as it is: records of the
   * `Map` tier with their segment, those of the compact tier as fingerprints with their bucket
   * (and the store's seed), the summary at its own width; keys read back from a summary travel
   * inside it.
   */
  snapshot(savedAt: number = systemClock.now()): string {
    const filter = this.#filter;
    // A waiting table's bits are in the filter only if they came with it.
    const tables: TableSnapshot[] = [...this.#pending.values()].map((p) => {
      const { filterIndex, ...rest } = p;
      const kept = this.#filtered.get(`${p.id}\u0000${p.shape}`);
      return filter !== undefined && kept !== undefined && kept === filterIndex ? p : rest;
    });
    const compact = this.#compact;
    for (const table of this.#tables.values()) {
      const saved = saveTable(table, compact, this.#seed);
      // Cells restored without their keys' bits still matter: the next restore must not trust the filter for them.
      if (filter !== undefined && saved.sketch !== undefined && !(now(table) < table.unfilteredUntil)) {
        saved.filterIndex = table.index;
      }
      tables.push(saved);
    }
    return encodeSnapshot(
      tables,
      savedAt,
      filter?.save(this.#seed, (id) => id),
    );
  }

  /**
   * Loads a snapshot written by `snapshot()`. The text is checked whole first: anything that is
   * not a sluice state file of a version read here, or that holds a malformed figure (a NaN
   * instant, say), throws ArgumentError and loads nothing. Records are adopted when a rule with
   * the same id and shape is bound (at once if it already is): each key gets its own record
   * back, in its tier; what does not fit this store (a smaller `maxKeys` or `maxBytes`) is
   * summarised, conservatively. A table with a record whose layout does not match its rule is
   * dropped whole. `restored()` says what became of every table, and why.
   * Returns the number of records read.
   */
  restore(text: string): number {
    const { tables, filter } = decodeSnapshot(text);
    if (filter !== undefined) this.#loadFilter(filter, tables);
    let records = 0;
    for (const snapshot of tables) {
      const id = `${snapshot.id}\u0000${snapshot.shape}`;
      const saved = snapshot.records.length + (snapshot.compact?.length ?? 0);
      records += saved;
      const report = savedTable(snapshot.id, snapshot.shape, saved);
      this.#restores.set(id, report);
      const table = this.#tables.get(id);
      if (table === undefined) this.#pending.set(id, snapshot);
      else this.#adopt(table, snapshot, report);
    }
    return records;
  }

  /**
   * What the restores did so far, per saved table: records back exactly, kept only in a summary,
   * dropped, expired, or waiting for their rule, and why. Read it once the rules are bound: a
   * table whose rule is bound under another shape (its window or algorithm changed) waits, and
   * its keys start fresh.
   */
  restored(): RestoreReport {
    const tables = [...this.#restores.entries()].map(([id, entry]) => {
      const copy = { ...entry, reasons: [...entry.reasons] };
      if (copy.status !== "waiting") return copy;
      const prefix = id.slice(0, id.lastIndexOf("\u0000") + 1);
      const other = [...this.#tables.values()].find(
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
  #loadFilter(saved: SavedFilter, tables: TableSnapshot[]): void {
    const bits = SummaryFilter.bitsFor(this.#filterBudget);
    if (bits !== saved.bits || (this.#filter !== undefined && this.#filter.joins > 0)) return;
    if (saved.seed !== this.#seed && !this.#unhashed()) return;
    const filter = new SummaryFilter<string>(bits);
    if (!filter.load(saved, (id) => id)) return;
    this.#filter = filter;
    this.#seed = saved.seed;
    for (const t of tables)
      if (t.filterIndex !== undefined) this.#filtered.set(`${t.id}\u0000${t.shape}`, t.filterIndex);
  }

  /** Whether nothing was hashed yet (a restored seed may then replace ours). */
  #unhashed(): boolean {
    if (this.#compact !== undefined && this.#compact.size > 0) return false;
    for (const table of this.#tables.values()) if (table.sketch !== undefined || table.pins.size > 0) return false;
    return true;
  }

  /**
   * Moves a restored table's records into `table`, if every one has the rule's layout: each
   * `Map` record into its segment, each compact record into its bucket (when this tier has the
   * saved one's size and the table its saved index), the summary at its width (folded to fit
   * this store's budget). What does not fit is summarised; `report` says so.
   */
  #adopt(table: Table, snapshot: TableSnapshot, report: RestoredTable): void {
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
    const rows: Array<[number, number, number, number, number | undefined, RuleRecord]> = [];
    for (const [h1, h2, w0, w1, bucket] of snapshot.compact ?? []) {
      scratch[0] = w0 as number;
      scratch[1] = w1 as number;
      const record = decodeRecord(rule, scratch, 0);
      if (!sane(record)) {
        refuse(`a compact record (fingerprint ${h1}) does not fit the rule's layout`);
        return;
      }
      rows.push([h1 as number, h2 as number, w0 as number, w1 as number, bucket, record]);
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
    const usable = hashed && seed !== undefined && (seed === this.#seed || this.#unhashed());
    if (usable) this.#seed = seed as number;
    const summarisedBefore = this.#summarised;
    // Probation's records first, then the protected segment's (keys that came back) into theirs.
    const first = snapshot.records.length - (snapshot.protected ?? 0);
    snapshot.records.forEach(([key, record, rate], i) => {
      if (table.delete(key)) this.#size--;
      const freshAt = recordFreshAt(rule, record);
      // A read-back key is kept even when what it took since is fresh: its debts may still count.
      if (rate === undefined && !(freshAt > t)) {
        report.expired++; // decides as a fresh key: nothing to keep
        return;
      }
      if (this.#size >= this.maxKeys) this.#evict(table, t);
      table.adopt(
        key,
        rate === undefined ? record : this.#readBack(key, record as RuleRecord, rate, rule),
        freshAt,
        i >= first,
      );
      this.#size++;
      report.exact++;
    });
    if (hashed && !usable) {
      report.dropped += rows.length;
      report.reasons.push(
        "this store had hashed keys with another seed already: the compact records and the summary are dropped (restore into a new store)",
      );
    }
    if (usable && snapshot.sketch !== undefined) this.#adoptSketch(table, snapshot.sketch, t, report);
    if (usable) this.#adoptCompact(table, snapshot, rows, t, report);
    // Records pushed out of the exact tiers to make room (this store is smaller than the saved one).
    const pushed = this.#summarised - summarisedBefore - report.summarised;
    if (pushed > 0) {
      report.exact -= Math.min(report.exact, pushed);
      report.summarised += pushed;
      report.reasons.push(
        `${pushed} records did not fit this store's exact tiers (a smaller \`maxKeys\` or \`maxBytes\` than the saved store's) and were summarised`,
      );
    }
  }

  /** A key read back from the summary, as saved: what it took since (`own`) and its debts. */
  #readBack(key: string, own: RuleRecord, rate: number[], rule: CompiledRule): Approx {
    const h = this.#hash(key);
    const approx = new Approx(own, h[0] as number, h[1] as number, rule);
    // The same shape has the same rate-based members: the pairs line up.
    if (rate.length === approx.rate.length) for (let i = 0; i < rate.length; i++) approx.rate[i] = rate[i] as number;
    return approx;
  }

  /** Loads a saved summary into `table` (joined with one it has), folded to fit this store's budget. */
  #adoptSketch(table: Table, saved: NonNullable<TableSnapshot["sketch"]>, t: number, report: RestoredTable): void {
    const sketch = new Sketch(table.rule, saved.width);
    if (sketch.width !== saved.width || !sketch.load(saved.cells)) {
      report.reasons.push("its summary does not fit the rule's cells and is dropped (keys it held read as new)");
      return;
    }
    const from = sketch.width;
    let others = 0;
    for (const other of this.#tables.values()) if (other !== table) others += other.sketch?.bytes ?? 0;
    const own = table.sketch;
    while (
      sketch.width > 1 &&
      (sketch.width > this.#sketchWidth || others + Math.max(sketch.bytes, own?.bytes ?? 0) > this.#summaryBudget)
    ) {
      sketch.fold(t);
    }
    if (own === undefined) table.sketch = sketch;
    else own.absorb(sketch, t);
    // Unless the filter came with the file and places this table's keys where it did, the file
    // says nothing of which keys the cells hold: until they stop mattering, every key may be in them.
    if (this.#filtered.get(table.id) !== table.index) {
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
  #adoptCompact(
    table: Table,
    snapshot: TableSnapshot,
    rows: Array<[number, number, number, number, number | undefined, RuleRecord]>,
    t: number,
    report: RestoredTable,
  ): void {
    if (rows.length === 0) return;
    const rule = table.rule;
    const at = snapshot.compactAt;
    const buckets = CompactTable.bucketsFor(this.#compactBudget);
    const why =
      at === undefined
        ? "the file does not say where they were (an older version)"
        : !Number.isFinite(this.maxKeys) || !compactable(rule) || this.#compactBudget < CompactTable.bytesFor(1)
          ? "this store has no compact tier for the rule"
          : buckets !== at.buckets
            ? `this store's compact tier has ${buckets} buckets, the saved one ${at.buckets} (\`maxKeys\` or \`maxBytes\` changed)`
            : table.index !== at.index
              ? "the rule has another place in the compact tier (bound in another order, or bound before the restore)"
              : undefined;
    let summarised = 0;
    for (const [h1, h2, w0, w1, bucket, record] of rows) {
      if (!(recordFreshAt(rule, record) > t)) {
        report.expired++;
        continue;
      }
      if (why !== undefined || bucket === undefined) {
        this.#summarise(table, h1, h2, record, t);
        summarised++;
        continue;
      }
      this.#compact ??= new CompactTable(buckets);
      const compact = this.#compact;
      const slot = compact.claimIn(bucket, table.index, h1, h2);
      this.#pushedOut(compact, table, t);
      const words = compact.stateIndex(slot);
      compact.words[words] = w0;
      compact.words[words + 1] = w1;
      table.compactSize++;
      report.exact++;
    }
    if (summarised > 0) {
      report.summarised += summarised;
      report.reasons.push(`${summarised} compact records were summarised: ${why}`);
    }
  }

  /** The key's fingerprint under `table`, in `#h`. */
  #hash(key: string): Uint32Array {
    fingerprint(this.#seed, key, this.#h);
    return this.#h;
  }

  /** `op` on `key` through the tiers (no block beside the record to consider). */
  #decide(table: Table, key: string, cost: number, t: number, op: Operation, at?: number): Decision {
    if (op === "penalty" || op === "block") return this.#force(table, key, cost, t, op);
    if (op !== "peek" && op !== "get") {
      // The hot path: a live key is one Map lookup and one decision.
      const record = table.get(key, t);
      if (record !== undefined) {
        if (record instanceof Approx) return this.#decideApprox(table, key, record, cost, t, op, at);
        return decideRule(table.rule, record, t, cost, op, at);
      }
    }
    return this.#miss(table, key, cost, t, op, at);
  }

  /**
   * `op` on a rule that keeps blocks beside its records (core/block.ts): a block sets the key's
   * end; a key still blocked runs what a blocked key runs (a refund or a penalty still reaches
   * its record) and is answered as banned; an ended block is forgotten.
   */
  #blockable(table: Table, key: string, cost: number, t: number, op: Operation, at?: number): Decision {
    let until = table.blocks?.get(key);
    if (op === "block") {
      if (until === undefined) this.#roomForBlock(table, t);
      until = t + cost;
      table.blocks ??= new Map();
      table.blocks.set(key, until);
    } else if (until !== undefined && !(until > t)) {
      const blocks = table.blocks as Map<string, number>;
      blocks.delete(key);
      if (blocks.size === 0) table.blocks = undefined;
      until = undefined;
    }
    if (until === undefined) return this.#decide(table, key, cost, t, op, at);
    const inner = underBlock(op);
    return blockedAnswer(this.#decide(table, key, costUnderBlock(op, cost), t, inner, at), t, until);
  }

  /**
   * Makes sure one more key can be blocked: under `maxKeys`, blocks (kept until they end, never
   * evicted nor summarised) count against it, across all rules, so a flood of distinct blocked
   * keys holds bounded memory. When full, the blocks of `table` that have ended go first; if none
   * has, the block is refused with a StoreError (dropping another key's block would lift it
   * silently), as the SharedMemoryStore does when a bucket has no room for one.
   */
  #roomForBlock(table: Table, t: number): void {
    if (!Number.isFinite(this.maxKeys) || this.#blockCount() < this.maxKeys) return;
    this.#unblock(table, t);
    if (this.#blockCount() < this.maxKeys) return;
    throw new StoreError(
      `MemoryStore: ${this.maxKeys} keys are blocked already (\`maxKeys\`; blocks count against it until they end); create the store with a larger \`maxKeys\`, or give the rule a \`ban\``,
    );
  }

  /** Keys blocked beside their records now, across all rules (blocks are rare: a walk of the rules). */
  #blockCount(): number {
    let n = 0;
    for (const table of this.#tables.values()) n += table.blocks?.size ?? 0;
    return n;
  }

  /** Forgets the blocks of `table` that have ended by `now`. */
  #unblock(table: Table, now: number): void {
    const blocks = table.blocks;
    if (blocks === undefined) return;
    for (const [key, until] of blocks) if (!(until > now)) blocks.delete(key);
    if (blocks.size === 0) table.blocks = undefined;
  }

  /**
   * A penalty or a block: decided like a check, then the table is told to keep the record until
   * it is fresh, since a forced take or a block may outlast the rule's horizon (the span its
   * generations rotate on) and dropping it sooner would forget units or a block.
   */
  #force(table: Table, key: string, cost: number, t: number, op: Operation): Decision {
    const found = table.get(key, t);
    const result =
      found === undefined
        ? this.#miss(table, key, cost, t, op)
        : found instanceof Approx
          ? this.#decideApprox(table, key, found, cost, t, op)
          : decideRule(table.rule, found, t, cost, op);
    const record = table.find(key);
    if (record !== undefined) {
      table.adopt(key, record, recordFreshAt(table.rule, record instanceof Approx ? record.own : record));
    }
    return result;
  }

  /** A peek, or a key with no record in the `Map` tier: the compact tier, the summary, or a fresh record decides. */
  #miss(table: Table, key: string, cost: number, t: number, op: Operation, at?: number): Decision {
    const rule = table.rule;
    if (op === "peek" || op === "get") {
      const found = table.find(key);
      if (found instanceof Approx) return this.#decideApprox(table, key, found, cost, t, op);
      if (found !== undefined) return decideRule(rule, found, t, cost, op);
    }
    const compact = this.#compact;
    const sketch = table.sketch;
    if ((compact === undefined || table.compactSize === 0) && sketch === undefined)
      return this.#fresh(table, key, cost, t, op);
    const h = this.#hash(key);
    if (compact !== undefined && table.compactSize > 0) {
      const slot = compact.find(table.index, h);
      if (slot >= 0) {
        // Exact in the compact tier: back into the `Map` tier (it came back: it is not a one-shot key).
        const record = decodeRecord(rule, compact.words, compact.stateIndex(slot));
        if (op === "peek" || op === "get") return decideRule(rule, record, t, cost, op);
        compact.remove(slot);
        table.compactSize--;
        this.#compactHits++;
        this.#insert(table, key, record, t, true);
        return decideRule(rule, record, t, cost, op, at);
      }
    }
    const h1 = h[0] as number;
    const h2 = h[1] as number;
    if (sketch?.present(h1, h2, t) && this.#mayHold(table, h1, h2, t) && !this.#pinned(table, h1, h2, t)) {
      const approx = new Approx(createRecord(rule), h1, h2, rule);
      const result = this.#decideApprox(table, key, approx, cost, t, op, at);
      if (op !== "peek" && op !== "get" && storesNewRecord(rule, op, result)) this.#insert(table, key, approx, t);
      return result;
    }
    return this.#fresh(table, key, cost, t, op);
  }

  /** A key nothing is known of: a fresh record decides (and is stored if it changed). */
  #fresh(table: Table, key: string, cost: number, t: number, op: Operation): Decision {
    const record = createRecord(table.rule);
    const result = decideRule(table.rule, record, t, cost, op);
    if (op !== "peek" && storesNewRecord(table.rule, op, result)) this.#insert(table, key, record, t);
    return result;
  }

  /**
   * A key read back from the summary: decided on the summary's estimate with `own` added, and
   * what the decision takes (or gives back) is applied to `own` alone. When the summary no
   * longer holds anything for the key, `own` is its exact record again.
   */
  #decideApprox(
    table: Table,
    key: string,
    approx: Approx,
    cost: number,
    t: number,
    op: Operation,
    at?: number,
  ): Decision {
    const rule = table.rule;
    table.sketch ??= this.#newSketch(table);
    const sketch = table.sketch;
    const present = sketch.present(approx.h1, approx.h2, t);
    if (!present && approx.settled(t)) {
      if (op !== "peek" && op !== "get" && table.find(key) === approx) table.replace(key, approx.own);
      return decideRule(rule, approx.own, t, cost, op, at);
    }
    const estimate = sketch.estimate(approx.own, approx.rate, present, t, (a, b) => permits(rule, a, b, t, cost));
    const own = approx.own;
    const ban = banState(rule, estimate);
    const mine = banState(rule, own);
    if (ban !== undefined && mine !== undefined) {
      // The key's strikes are a chain on its own record (core/ban.ts), begun from its cells' at
      // the first read-back; after that the cells' strikes are other keys' and only their ban
      // still counts (the estimate summed `own`'s count into them: it is replaced by the chain).
      if (mine.readBack !== true) {
        mine.n = ban.n;
        mine.since = ban.since;
        markReadBack(mine);
      }
      ban.n = mine.n;
      ban.since = mine.since;
      if (mine.until > ban.until) ban.until = mine.until;
      markReadBack(ban);
    }
    const result = decideRule(rule, estimate, t, cost, op, at);
    result.approximate = true;
    this.#approximate++;
    if (!result.allowed && op === "check") this.#refused++;
    if (op === "check" && result.allowed) {
      rule.members.forEach((m: Algorithm, i) => {
        m.step(memberState(rule, own, i), t, cost, true);
      });
      oweUnits(rule, approx.rate, cost);
    } else if (op === "check" && ban !== undefined && mine !== undefined) {
      // The denial counted on the estimate's chain (or its end, when it settled) is the key's.
      mine.n = ban.n;
      mine.since = ban.since;
      mine.until = ban.until;
      mine.readBack = ban.readBack === true;
    } else if (op === "penalty" || op === "block") {
      // What the call wrote on the estimate is written on the key's own record too; a penalty's
      // units are a backlog on top of the summary's as an admission's are (each maps an instant
      // x to max(x, now) + cost·T), so they are added to the debt as well.
      decideRule(rule, own, t, cost, op);
      if (op === "penalty") oweUnits(rule, approx.rate, cost);
    } else if (op === "refund") {
      rule.members.forEach((m: Algorithm, i) => {
        m.refund(memberState(rule, own, i), t, cost, at);
        if (isRate(m)) {
          // What the refund gave back (a receipt gives back only what has not drained since).
          const unit = cost * unitMs(m);
          const give = at === undefined ? unit : Math.max(0, unit - Math.max(0, t - at));
          approx.rate[2 * i] = (approx.rate[2 * i] as number) - give;
        }
      });
    } else if (op === "release" || (op === "renew" && result.allowed)) {
      // The key's own leases are released (or moved) exactly; what the summary holds for it only
      // expires (conservative: a summarised lease counts until its leaseMs ends).
      decideRule(rule, own, t, cost, op, at);
    }
    return result;
  }

  /**
   * Whether `table`'s summary may hold the key (h1, h2): the filter holds it, or the filter cannot
   * tell (none yet, or cells restored from a snapshot, which saves no keys, still matter).
   */
  #mayHold(table: Table, h1: number, h2: number, t: number): boolean {
    const filter = this.#filter;
    return filter === undefined || t < table.unfilteredUntil || filter.mayHold(table.index, h1, h2);
  }

  /**
   * Whether what table `id` joined into the filter up to `at` no longer matters on its clock (a
   * table restored but not bound yet still matters; a dropped one does not).
   */
  readonly #filterPast = (id: string, at: number): boolean => {
    const table = this.#tables.get(id);
    if (table !== undefined) return !(at > now(table));
    return !this.#pending.has(id);
  };

  /** Whether a summarised key was reset and its summary is to be ignored until its pin runs out. */
  #pinned(table: Table, h1: number, h2: number, t: number): boolean {
    if (table.pins.size === 0) return false;
    const id = h1 * 65536 + (h2 >>> 16);
    const until = table.pins.get(id);
    if (until === undefined) return false;
    if (t < until) return true;
    table.pins.delete(id);
    this.#pins--;
    return false;
  }

  /** Pins a reset key fresh until `until`; the oldest pin of the most pinned table goes when there are too many. */
  #pin(table: Table, h1: number, h2: number, until: number): void {
    const id = h1 * 65536 + (h2 >>> 16);
    if (table.pins.delete(id)) this.#pins--;
    if (this.#pins >= this.#maxPins) {
      let most = table;
      for (const other of this.#tables.values()) if (other.pins.size > most.pins.size) most = other;
      const oldest = most.pins.keys().next();
      if (oldest.done !== true) {
        most.pins.delete(oldest.value);
        this.#pins--;
        this.#pinsDropped++;
      }
    }
    table.pin(id, until);
    this.#pins++;
  }

  /** Stores a record in the `Map` tier (`returning`: straight into the protected segment), first pushing one out if it is full. */
  #insert(table: Table, key: string, record: unknown, t: number, returning = false): void {
    // Tables drop fresh generations on their own (only by rotating): count again before evicting anything.
    if (this.#size >= this.maxKeys && this.#countedAt !== rotations.count) {
      this.#countedAt = rotations.count;
      this.#size = this.size;
    }
    if (this.#size >= this.maxKeys) this.#evict(table, t);
    table.add(key, record, returning);
    this.#size++;
  }

  /**
   * Makes room for one record. The victim comes from the rule holding the most records, so a
   * flood through one rule pushes out that rule's own records and never another's while the
   * other holds fewer: capacity is shared fairly between rules. The victim goes to the compact
   * tier when its record fits there, else into its rule's summary.
   */
  #evict(inserting: Table, t: number): void {
    let victim = inserting;
    // With many rules the fullest is looked for once per max(64, rules) evictions, not on every
    // one: amortised O(1) whatever the number of rules. Between scans the inserting rule is the
    // victim when it holds at least as many as the last fullest (so rules flooded in turn, which
    // keep overtaking each other, never force a scan each).
    const cached = this.#fullest;
    if (
      this.#tables.size <= 4 ||
      --this.#scanIn <= 0 ||
      cached === undefined ||
      this.#tables.get(cached.id) !== cached
    ) {
      this.#scanIn = Math.max(64, this.#tables.size);
      for (const table of this.#tables.values()) if (table.size > victim.size) victim = table;
      this.#fullest = victim;
    } else if (cached.size > inserting.size) victim = cached;
    else this.#fullest = inserting;
    const entry = victim.shift();
    if (entry === undefined) return;
    const [key, record] = entry;
    this.#size--;
    this.#evicted++;
    const at = victim === inserting ? t : now(victim);
    if (record instanceof Approx) {
      this.#summarise(victim, record.h1, record.h2, record.own, at, record);
      return;
    }
    if (!(recordFreshAt(victim.rule, record) > at)) return; // fresh: nothing to keep
    const h = this.#hash(key);
    const h1 = h[0] as number;
    const h2 = h[1] as number;
    if (victim.index > 0 && compactable(victim.rule) && this.#compactBudget >= CompactTable.bytesFor(1)) {
      this.#compact ??= new CompactTable(CompactTable.bucketsFor(this.#compactBudget));
      const compact = this.#compact;
      const slot = compact.claim(victim.index, h);
      this.#pushedOut(compact, victim, at);
      if (encodeRecord(victim.rule, record, compact.words, compact.stateIndex(slot))) {
        victim.compactSize++;
        return;
      }
      compact.remove(slot);
    }
    this.#summarise(victim, h1, h2, record, at);
  }

  /** Summarises what the compact tier's last `claim` pushed out, if anything (`at`: the instant of `claimer`'s clock). */
  #pushedOut(compact: CompactTable, claimer: Table, at: number): void {
    const pushed = compact.victim;
    if (pushed.table === 0) return;
    const owner = this.#byIndex[pushed.table];
    if (owner === undefined) return;
    owner.compactSize--;
    const ownerNow = owner === claimer ? at : now(owner);
    const old = decodeRecord(owner.rule, compact.victimWords, 0);
    if (recordFreshAt(owner.rule, old) > ownerNow) this.#summarise(owner, pushed.h1, pushed.h2, old, ownerNow);
  }

  /** Adds `record` into `table`'s summary (creating it within the budget); a pin on the key ends. */
  #summarise(table: Table, h1: number, h2: number, record: RuleRecord, t: number, approx?: Approx): void {
    this.#summarised++;
    if (table.pins.size > 0 && table.pins.delete(h1 * 65536 + (h2 >>> 16))) this.#pins--;
    table.sketch ??= this.#newSketch(table);
    table.sketch.add(h1, h2, record, t, approx?.rate);
    const bits = SummaryFilter.bitsFor(this.#filterBudget);
    if (bits === 0) return;
    this.#filter ??= new SummaryFilter<string>(bits);
    // The sketch's own fresh-at bounds what the key's cells hold (and so what its read-back needs).
    this.#filter.add(table.id, table.index, h1, h2, table.sketch.freshAt, this.#filterPast);
    if (!this.#warned && (this.#summarised & 4095) === 0) this.#checkSaturation(table.sketch, this.#filter, t);
  }

  /**
   * Warns once (`SLUICE_STORE_SATURATED`) when a never-seen key is likely (over 1%) to be read
   * back over-counted: the summary filter past its capacity and the summary's cells mostly live.
   */
  #checkSaturation(sketch: Sketch, filter: SummaryFilter<string>, t: number): void {
    const bound = filter.errorBound * sketch.fill(t) ** DEPTH;
    if (!(bound > 0.01)) return;
    this.#warned = true;
    warn(
      `MemoryStore: about ${(100 * bound).toFixed(1)}% of never-seen keys may now be refused as over-counted (stats().summaryErrorBound): ${this.#summarised} records were pushed past \`maxKeys\` (${this.maxKeys}) into ${this.maxBytes} bytes of compact tier, filter and summaries; raise \`maxBytes\` (or \`maxKeys\`) so that honest clients keep passing`,
      "SLUICE_STORE_SATURATED",
    );
  }

  /**
   * A summary for `table`, as wide as the store's summary budget allows once every other rule's
   * summary is counted; the widest others fold in half (conservatively) to make room, so 1 rule
   * or 1,000 share the same bytes.
   */
  #newSketch(table: Table): Sketch {
    const rule = table.rule;
    let width = Math.max(1, this.#sketchWidth);
    while (width > 1 && sketchBytes(rule, width) > this.#summaryBudget) width /= 2;
    const others = () => {
      let bytes = 0;
      for (const other of this.#tables.values()) bytes += other.sketch?.bytes ?? 0;
      return bytes;
    };
    let used = others();
    while (used + sketchBytes(rule, width) > this.#summaryBudget) {
      let widest: Table | undefined;
      for (const other of this.#tables.values()) {
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

  /** Lets every table on `clock` drop what is fresh at `now` (instants of other clocks don't compare). */
  #sweep(now: number, clock: unknown): void {
    this.#sweepIn = SWEEP_EVERY;
    let size = 0;
    for (const [id, table] of this.#tables) {
      if (table.clock === clock) {
        table.expire(now);
        this.#unblock(table, now);
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
        this.#drop(id, table);
      } else size += table.size;
    }
    this.#size = size;
  }
}

/** Whether record `a` admits more than `b` for `cost` at `t` (allowed first, then more remaining, then sooner). */
function permits(rule: CompiledRule, a: RuleRecord, b: RuleRecord, t: number, cost: number): boolean {
  const da = decideRule(rule, a, t, cost, "peek");
  const db = decideRule(rule, b, t, cost, "peek");
  if (da.allowed !== db.allowed) return da.allowed;
  if (da.remaining !== db.remaining) return da.remaining > db.remaining;
  return da.retryAfterMs < db.retryAfterMs;
}

/** The current instant of a table's clock (for a reset, which carries no `now`). */
function now(table: Table): number {
  const clock = table.clock as { now(): number } | undefined;
  return clock === undefined ? systemClock.now() : clock.now();
}

/**
 * The in-process store: synchronous, so each decision is atomic within the JS thread. Each
 * (rule, key) has one record, decided by `decideRule`. Records that have become equivalent to
 * a fresh key are dropped without timers (see `Table`). `maxKeys` is a hard cap on exact
 * records: past it the least recently used record of the fullest rule is summarised in that
 * rule's fixed-size sketch, which can only over-count, so no key ever passes its limit and
 * memory stays bounded however many keys arrive.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { systemClock } from "../../clock.ts";
import { decideRule, type Operation, storesNewRecord } from "../../decide-rule.ts";
import { ArgumentError } from "../../errors.ts";
import { checkOptions } from "../../options.ts";
import { type CompiledRule, createRecord, type RuleRecord, recordFreshAt } from "../../rule.ts";
import { describeValue } from "../../spec.ts";
import type { BoundRule, RuleBinding, Store } from "../../store.ts";
import { Sketch } from "./sketch.ts";
import { decodeSnapshot, encodeSnapshot, sameLayout, type TableSnapshot } from "./snapshot.ts";
import { Table } from "./table.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Hard cap on exact records across all rules (default: no cap beyond fresh-state expiry). */
  maxKeys?: number;
  /** Cells per sketch row (default: maxKeys / 2, at least 1024, at most 65536). */
  sketchWidth?: number;
}

/** Checks between sweeps of every table (see `#sweep`). */
const SWEEP_EVERY = 4096;

/** What `stats()` reports. */
export interface MemoryStoreStats {
  /** Exact records held now, across all rules. */
  keys: number;
  /** The cap on exact records (Infinity when none). */
  maxKeys: number;
  /** Records pushed out of the exact table into a sketch because of `maxKeys`. */
  evicted: number;
  /** Decisions read back from a sketch (they carry `approximate: true`). */
  approximate: number;
  /** Of those, denials: at most this many requests were refused that exact state might have allowed. */
  refused: number;
  /** Bytes held by sketches (fixed per rule once created). */
  sketchBytes: number;
}

/**
 * Keeps rate-limit state in this process.
 *
 * @example const store = new MemoryStore({ maxKeys: 100_000 }); createLimiter(spec, { store })
 */
export class MemoryStore implements Store {
  /** Checks return plain decisions, never promises. */
  readonly synchronous = true;
  /** The hard cap on exact records (Infinity when none). */
  readonly maxKeys: number;
  readonly #sketchWidth: number;
  /** Tables by rule id and shape: a record is only ever read under the shape it was written for. */
  #tables = new Map<string, Table>();
  /** Restored tables waiting for their rule to be bound (by table id). */
  #pending = new Map<string, TableSnapshot>();
  #size = 0;
  #sweepIn = SWEEP_EVERY;
  #evicted = 0;
  #approximate = 0;
  #refused = 0;

  constructor(options: MemoryStoreOptions = {}) {
    checkOptions(options, "MemoryStore", ["maxKeys", "sketchWidth"]);
    const { maxKeys, sketchWidth } = options;
    for (const [name, value] of [
      ["maxKeys", maxKeys],
      ["sketchWidth", sketchWidth],
    ] as const) {
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
        throw new ArgumentError(`\`${name}\` must be a positive integer (got ${describeValue(value)})`);
      }
    }
    this.maxKeys = maxKeys ?? Number.POSITIVE_INFINITY;
    this.#sketchWidth = sketchWidth ?? Math.min(65536, Math.max(1024, Math.ceil((maxKeys ?? 0) / 2)));
  }

  /** Exact records held now, across all rules. */
  get size(): number {
    let n = 0;
    for (const table of this.#tables.values()) n += table.size;
    return n;
  }

  /** How many records were pushed into a sketch because of `maxKeys`. */
  get evicted(): number {
    return this.#evicted;
  }

  /** Counters for logs and metrics. */
  stats(): MemoryStoreStats {
    let sketchBytes = 0;
    for (const table of this.#tables.values()) sketchBytes += table.sketch?.bytes ?? 0;
    return {
      keys: this.size,
      maxKeys: this.maxKeys,
      evicted: this.#evicted,
      approximate: this.#approximate,
      refused: this.#refused,
      sketchBytes,
    };
  }

  /** Binds a rule; it shares records with earlier bindings of the same id and shape. */
  bind(binding: RuleBinding): BoundRule {
    const { rule } = binding;
    const id = `${binding.id}\u0000${rule.shape}`;
    let table = this.#tables.get(id);
    if (table === undefined) {
      table = new Table(rule);
      this.#tables.set(id, table);
      const restored = this.#pending.get(id);
      if (restored !== undefined) {
        this.#pending.delete(id);
        this.#adopt(table, restored);
      }
    }
    table.rule = rule;
    if (table.sketch !== undefined) table.sketch.rule = rule;
    table.horizonMs = Math.max(table.horizonMs, rule.horizonMs);
    table.clock = binding.clock;
    table.refs++;
    const bound = table;
    let released = false;
    return {
      check: (key, cost, now, op) => {
        const t = now === undefined ? systemClock.now() : now;
        if (--this.#sweepIn === 0) this.#sweep(t, bound.clock);
        if (op !== "peek") {
          // The hot path: a live key is one Map lookup and one decision.
          const record = bound.get(key, t);
          if (record !== undefined) return decideRule(rule, record, t, cost, op);
        }
        return this.#miss(bound, rule, key, cost, t, op);
      },
      reset: (key) => {
        if (bound.delete(key)) this.#size--;
        // A key summarised in the sketch would be read back over-counted; an explicit fresh
        // record makes "forget this key" exact.
        const t = now(bound);
        if (bound.sketch?.read(key, t) !== undefined) {
          bound.expire(t); // rotate first, so the new record is not dropped by a pending rotation
          this.#insert(bound, key, createRecord(rule));
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
        for (const table of this.#tables.values()) if (table.refs > 0 && table.clock === bound.clock) return;
        if (this.#tables.get(id) === bound) {
          this.#size -= bound.size;
          this.#tables.delete(id);
        }
      },
    };
  }

  /**
   * Every table's records (and sketch) as text, for `restore` after a restart. Records hold
   * absolute instants, so counts survive exactly. Restored tables not yet bound are kept too.
   */
  snapshot(savedAt: number = systemClock.now()): string {
    const tables: TableSnapshot[] = [...this.#pending.values()];
    for (const [id, table] of this.#tables) {
      const sep = id.lastIndexOf("\u0000");
      tables.push({
        id: id.slice(0, sep),
        shape: id.slice(sep + 1),
        records: [...table.entries()],
        sketch:
          table.sketch === undefined
            ? undefined
            : { width: table.sketch.width, seed: table.sketch.seed, cells: table.sketch.toBase64() },
      });
    }
    return encodeSnapshot(tables, savedAt);
  }

  /**
   * Loads a snapshot written by `snapshot()`. The text is checked whole first: anything that is
   * not a sluice state file of this version throws ArgumentError and loads nothing. Records are
   * adopted when a rule with the same id and shape is bound (at once if it already is); a
   * record whose layout does not match its rule is dropped with its whole table.
   * Returns the number of records read.
   */
  restore(text: string): number {
    const tables = decodeSnapshot(text);
    let records = 0;
    for (const snapshot of tables) {
      const id = `${snapshot.id}\u0000${snapshot.shape}`;
      records += snapshot.records.length;
      const table = this.#tables.get(id);
      if (table === undefined) this.#pending.set(id, snapshot);
      else this.#adopt(table, snapshot);
    }
    return records;
  }

  /** Moves a restored table's records into `table`, if every one has the rule's layout. */
  #adopt(table: Table, snapshot: TableSnapshot): void {
    const rule = table.rule;
    const template = createRecord(rule);
    const t = now(table);
    // The layout first, then what the record decides: a tampered record (a negative count, a
    // buffer position past its buffer) must not poison decisions.
    const sane = (record: unknown) => {
      if (!sameLayout(template, record)) return false;
      const d = decideRule(rule, structuredClone(record), t, 1, "peek");
      const figures = [d.remaining, d.retryAfterMs, d.resetMs, d.delayMs];
      return figures.every((x) => !Number.isNaN(x) && x >= 0) && d.remaining <= d.limit;
    };
    if (!snapshot.records.every(([, record]) => sane(record))) return;
    for (const [key, record] of snapshot.records) {
      if (table.delete(key)) this.#size--;
      if (this.#size >= this.maxKeys) this.#evict(table);
      table.adopt(key, record, recordFreshAt(table.rule, record));
      this.#size++;
    }
    if (snapshot.sketch !== undefined) {
      const sketch = new Sketch(table.rule, snapshot.sketch.width, snapshot.sketch.seed);
      if (sketch.width === snapshot.sketch.width && sketch.load(snapshot.sketch.cells)) table.sketch = sketch;
    }
  }

  /** A peek, or a key with no exact record: a fresh record, or the sketch's, decides. */
  #miss(table: Table, rule: CompiledRule, key: string, cost: number, now: number, op: Operation): Decision {
    if (op === "peek") {
      const found = table.find(key);
      if (found !== undefined) return decideRule(rule, found, now, cost, "peek");
    }
    const summarised = table.sketch?.read(key, now);
    let record: RuleRecord;
    if (summarised === undefined) record = createRecord(rule);
    else {
      // Every row dominates the key's own record; the most permissive one is the closest.
      let best = summarised[0];
      let bestDecision = decideRule(rule, best, now, cost, "peek");
      for (let i = 1; i < summarised.length; i++) {
        const d = decideRule(rule, summarised[i], now, cost, "peek");
        if (permits(d, bestDecision)) {
          best = summarised[i];
          bestDecision = d;
        }
      }
      record = best;
    }
    const result = decideRule(rule, record, now, cost, op);
    if (summarised !== undefined) {
      result.approximate = true;
      this.#approximate++;
      if (!result.allowed) this.#refused++;
      // Read back from the sketch, the record is kept exact from now on (it can only have grown).
      if (op !== "peek") this.#insert(table, key, record);
    } else if (op !== "peek" && storesNewRecord(rule, op, result)) this.#insert(table, key, record);
    return result;
  }

  /** Stores a new record, first pushing the least recently used one of the fullest rule into its sketch. */
  #insert(table: Table, key: string, record: RuleRecord): void {
    // Tables drop fresh generations on their own; count again before evicting anything.
    if (this.#size >= this.maxKeys) this.#size = this.size;
    if (this.#size >= this.maxKeys) this.#evict(table);
    table.set(key, record);
    this.#size++;
  }

  /**
   * Makes room for one record. The victim comes from the rule holding the most records, so a
   * flood through one rule pushes out that rule's own records and never another's while the
   * other holds fewer: capacity is shared fairly between rules.
   */
  #evict(inserting: Table): void {
    let victim = inserting;
    for (const table of this.#tables.values()) if (table.size > victim.size) victim = table;
    const entry = victim.shift();
    if (entry === undefined) return;
    const [key, record] = entry;
    this.#size--;
    this.#evicted++;
    victim.sketch ??= new Sketch(victim.rule, this.#sketchWidth);
    victim.sketch.add(key, record, recordFreshAt(victim.rule, record));
  }

  /** Lets every table on `clock` drop what is fresh at `now` (instants of other clocks don't compare). */
  #sweep(now: number, clock: unknown): void {
    this.#sweepIn = SWEEP_EVERY;
    let size = 0;
    for (const [id, table] of this.#tables) {
      if (table.clock === clock) table.expire(now);
      // An unbound table whose records are all gone is dropped with its sketch.
      if (table.refs === 0 && table.size === 0) this.#tables.delete(id);
      else size += table.size;
    }
    this.#size = size;
  }
}

/** Whether decision `a` admits more than `b` (allowed first, then more remaining, then sooner). */
function permits(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return a.allowed;
  if (a.remaining !== b.remaining) return a.remaining > b.remaining;
  return a.retryAfterMs < b.retryAfterMs;
}

/** The current instant of a table's clock (for a reset, which carries no `now`). */
function now(table: Table): number {
  const clock = table.clock as { now(): number } | undefined;
  return clock === undefined ? systemClock.now() : clock.now();
}

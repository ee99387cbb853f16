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
import type { Decision } from "../../algorithms/decision.ts";
import { blocksBeside } from "../../core/block.ts";
import { systemClock } from "../../core/clock.ts";
import { decideCheck, type Operation } from "../../core/decide-rule.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { adopt } from "./adopt.ts";
import { Approx } from "./approx.ts";
import { blockable } from "./blocks.ts";
import { decideApprox } from "./decide-approx.ts";
import { decide, miss } from "./decide-path.ts";
import { resetKey } from "./pins.ts";
import { type RestoreReport, savedTable } from "./restore-report.ts";
import { type MemoryStoreOptions, tierBudget } from "./store-options.ts";
import { restoredOf, restoreText, snapshotOf } from "./store-snapshot.ts";
import { now, StoreState } from "./store-state.ts";
import { keysOf, type MemoryStoreStats, type RuleKeys, statsOf } from "./store-stats.ts";
import { Table } from "./table.ts";
import { placeTable, releaseTable, sweep } from "./table-places.ts";

export { MEMORY_STORE_OPTIONS, type MemoryStoreOptions } from "./store-options.ts";
export type { MemoryStoreStats, RuleKeys } from "./store-stats.ts";

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
  /** The tiers and what they hold (the store's parts are functions of it). */
  readonly #s: StoreState;

  constructor(options: MemoryStoreOptions = {}) {
    const budget = tierBudget(options);
    this.maxKeys = budget.maxKeys;
    this.maxBytes = budget.maxBytes;
    this.#s = new StoreState(budget);
  }

  /** Exact records held now in the `Map` tier, across all rules. */
  get size(): number {
    return this.#s.countRecords();
  }

  /** How many records were pushed out of the `Map` tier because of `maxKeys`. */
  get evicted(): number {
    return this.#s.evicted;
  }

  /** Counters for logs and metrics. */
  stats(): MemoryStoreStats {
    return statsOf(this.#s);
  }

  /**
   * The keys held for rule identity `id` (a binding's `id`: a limiter's or a service rule tier's),
   * for operators (the status page's per-tier counts). Each table keeps its own sizes, so this
   * walks the tables, not the keys. Keys whose state has just become fresh count until their
   * table next drops fresh records (at the latest one rule horizon later).
   */
  keysOf(id: string): RuleKeys {
    return keysOf(this.#s, id);
  }

  /** Binds a rule; it shares records with earlier bindings of the same id and shape. */
  bind(binding: RuleBinding): BoundRule {
    const s = this.#s;
    const { rule } = binding;
    const id = `${binding.id}\u0000${rule.shape}`;
    let table = s.tables.get(id);
    if (table === undefined) {
      table = new Table(rule, id);
      table.protectedCap = s.budget.protectedCap;
      s.tables.set(id, table);
      const restored = s.pending.get(id);
      placeTable(s, table, restored?.compactAt?.index);
      if (restored !== undefined) {
        s.pending.delete(id);
        // Adopted at the binding's instant: its records and the cells they are summarised into
        // hold instants of this clock (the system clock's reading would shift every backlog).
        table.clock = binding.clock;
        adopt(s, table, restored, s.restores.get(id) ?? savedTable(restored.id, restored.shape, 0));
      }
    }
    table.rule = rule;
    if (table.sketch !== undefined) table.sketch.rule = rule;
    table.horizonMs = Math.max(table.horizonMs, rule.horizonMs);
    table.clock = binding.clock;
    table.refs++;
    table.quietAt = Number.POSITIVE_INFINITY;
    return boundRule(s, table, id, Approx);
  }

  /**
   * Every table's records (and summary) as text, for `restore` after a restart. Records hold
   * absolute instants, so counts survive exactly. Each tier travels as it is: records of the
   * `Map` tier with their segment, those of the compact tier as fingerprints with their bucket
   * (and the store's seed), the summary at its own width; keys read back from a summary travel
   * inside it.
   */
  snapshot(savedAt: number = systemClock.now()): string {
    return snapshotOf(this.#s, savedAt);
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
    return restoreText(this.#s, text);
  }

  /**
   * What the restores did so far, per saved table: records back exactly, kept only in a summary,
   * dropped, expired, or waiting for their rule, and why. Read it once the rules are bound: a
   * table whose rule is bound under another shape (its window or algorithm changed) waits, and
   * its keys start fresh.
   */
  restored(): RestoreReport {
    return restoredOf(this.#s);
  }
}

/**
 * The bound rule of `bound` (a table of store state `s`, under identity `id`). Built by a function
 * of its own so the hot closures read `s` and `bound` as parameters: a `const` of `bind`'s body
 * captured by a closure is read through a TDZ check, bytes that count against V8's inlining
 * budget on the hot path.
 */
function boundRule(s: StoreState, bound: Table, id: string, approx: typeof Approx): BoundRule {
  let released = false;
  /** A check past the live path (see `offLive`), with the parts this binding holds. */
  const off = (key: string, cost: number, now: number, found: unknown) => offLive(s, bound, key, cost, now, found);
  /**
   * A check with a reading: the hot path first (inlined into both entries below). A check has
   * no receipt (`at` is a refund's or a lease's), so none is passed on.
   */
  const checkAt = (key: string, cost: number, now: number): Decision => {
    // A check of a live key (no block, no sweep due) is one Map lookup and one decision. Kept
    // this small so V8 inlines it into the limiter's call (it counts bytecode against an
    // inlining budget): every other case is one call away. (`approx` is a parameter: the
    // imported class would be read through a hole check.)
    let found: unknown = offHotPath;
    if (bound.blocks === undefined && s.sweepIn > 1) {
      s.sweepIn--;
      found = bound.get(key, now);
      // (`constructor`, not `instanceof`: a record's map check, where instanceof walks its prototypes.)
      if (found !== undefined && (found as object).constructor !== approx) {
        // A bare rule's step straight away (what decideCheck does for it, without its branch).
        const one = bound.rule.one;
        return one !== undefined ? one.step(found, now, cost, true) : decideCheck(bound.rule, found, now, cost);
      }
    }
    return off(key, cost, now, found);
  };
  return {
    check: (key, cost, now, op, at) =>
      op === "check" && now !== undefined ? checkAt(key, cost, now) : offHotPath(s, bound, key, cost, now, op, at),
    // The limiter's fast lane: the same path with its constants folded in.
    checkOne: (key, now) => checkAt(key, 1, now),
    reset: (key) => resetKey(s, bound, key, now(bound)),
    release: () => {
      if (released) return;
      released = true;
      releaseTable(s, id, bound);
    },
  };
}

/**
 * A check past the live path: a key whose record (`found`) is absent or read back from the
 * summary, or (`found` is `offHotPath`) a block or a sweep due. Few arguments, for the bytecode
 * of `checkAt`'s call.
 */
function offLive(s: StoreState, bound: Table, key: string, cost: number, now: number, found: unknown): Decision {
  return found === offHotPath
    ? offHotPath(s, bound, key, cost, now, "check", undefined)
    : notLive(s, bound, key, cost, now, "check", undefined, found);
}

/** A check past the hot path: another operation, no `now`, a block beside some record, or a sweep due. */
function offHotPath(
  s: StoreState,
  bound: Table,
  key: string,
  cost: number,
  now: number | undefined,
  op: Operation,
  at: number | undefined,
): Decision {
  const t = now === undefined ? systemClock.now() : now;
  if (--s.sweepIn === 0) sweep(s, t, bound.clock);
  // Blocks of a rule without a ban (core/block.ts): one field test while the rule has none.
  if (bound.blocks !== undefined || (op === "block" && blocksBeside(bound.rule))) {
    return blockable(s, bound, key, cost, t, op, at);
  }
  return decide(s, bound, key, cost, t, op, at);
}

/** A check of a key whose `Map`-tier record (`found`) is absent or read back from the summary. */
function notLive(
  s: StoreState,
  bound: Table,
  key: string,
  cost: number,
  t: number,
  op: Operation,
  at: number | undefined,
  found: unknown,
): Decision {
  return found === undefined
    ? miss(s, bound, key, cost, t, op, at)
    : decideApprox(s, bound, key, found as Approx, cost, t, op, at);
}

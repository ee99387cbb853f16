/**
 * The in-process store: synchronous, so each decision is atomic within the JS thread.
 * State that has become equivalent to a fresh key is dropped without timers (see `Table`);
 * `maxKeys` adds a hard cap that evicts idle state and never a currently limited key.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import { systemClock } from "../../clock.ts";
import { combine, unconsumed } from "../../composite.ts";
import { type Decision, decision } from "../../algorithms/decision.ts";
import { ArgumentError } from "../../errors.ts";
import type { BoundRule, RuleBinding, Store } from "../../store.ts";
import { Table } from "./table.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Hard cap on stored key states across all rules (default: no cap beyond fresh-state expiry). */
  maxKeys?: number;
}

/** Checks between sweeps of every table (see `sweepIn`). */
const SWEEP_EVERY = 4096;

/** How far an insert scans for an idle record to evict before giving up. */
const EVICTION_SCAN = 64;

/**
 * Keeps rate-limit state in this process.
 *
 * @example const store = new MemoryStore({ maxKeys: 100_000 }); createLimiter(spec, { store })
 */
export class MemoryStore implements Store {
  /** Checks return plain decisions, never promises. */
  readonly synchronous = true;
  /** The hard cap on stored key states (Infinity when none). */
  readonly maxKeys: number;
  #tables = new Map<string, Table>();
  /**
   * Checks left until every table is asked to drop its fresh generations. A table rotates when
   * it is accessed; this also frees the state of rules nobody calls any more, at a cost of one
   * decrement per check. Internal.
   */
  sweepIn = SWEEP_EVERY;
  #evicted = 0;
  #refused = 0;

  constructor(options: MemoryStoreOptions = {}) {
    const { maxKeys } = options;
    if (maxKeys !== undefined && (!Number.isSafeInteger(maxKeys) || maxKeys < 1)) {
      throw new ArgumentError(`\`maxKeys\` must be a positive integer (got ${String(maxKeys)})`);
    }
    this.maxKeys = maxKeys ?? Number.POSITIVE_INFINITY;
  }

  /** Key states held now, across all rules and members. */
  get size(): number {
    let n = 0;
    for (const table of this.#tables.values()) n += table.size;
    return n;
  }

  /** How many idle key states were evicted because of `maxKeys`. */
  get evicted(): number {
    return this.#evicted;
  }

  /** How many new keys were denied because the store was full of currently limited keys. */
  get refused(): number {
    return this.#refused;
  }

  /** Counters for logs and metrics. */
  stats(): { keys: number; evicted: number; refused: number; maxKeys: number } {
    return { keys: this.size, evicted: this.#evicted, refused: this.#refused, maxKeys: this.maxKeys };
  }

  /** Binds a rule; members share state with earlier bindings of the same id and algorithm. */
  bind(rule: RuleBinding): BoundRule {
    const tables = rule.algorithms.map((algorithm, i) => {
      const id = `${rule.id}\u0000${i}\u0000${algorithm.kind}`;
      let table = this.#tables.get(id);
      if (table === undefined) {
        table = new Table(algorithm);
        this.#tables.set(id, table);
      }
      table.algorithm = algorithm;
      table.clock = rule.clock;
      table.refs++;
      return { id, table };
    });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const { id, table } of tables) {
        if (--table.refs === 0 && this.#tables.get(id) === table) this.#tables.delete(id);
      }
    };
    const reset = (key: string) => {
      for (const { table } of tables) table.delete(key);
    };
    const only = tables.length === 1 ? (tables[0] as { table: Table }).table : undefined;
    if (only !== undefined) {
      const algorithm = only.algorithm;
      return {
        check: (key, cost, now, peek) => {
          const t = now === undefined ? systemClock.now() : now;
          if (--this.sweepIn === 0) this.#sweep(t, only.clock);
          if (!peek) {
            // The hot path: a live key is one Map lookup and one step.
            const state = only.get(key, t);
            if (state !== undefined) return algorithm.step(state, t, cost, true);
          }
          return this.#single(only, algorithm, key, cost, t, peek);
        },
        reset,
        release,
      };
    }
    const members = tables.map(({ table }) => table);
    return {
      check: (key, cost, now, peek) => {
        const t = now === undefined ? systemClock.now() : now;
        if (--this.sweepIn === 0) this.#sweep(t, (members[0] as Table).clock);
        return this.#composite(members, key, cost, t, peek);
      },
      reset,
      release,
    };
  }

  /** Lets every table on `clock` drop what is fresh at `now` (instants of other clocks don't compare). */
  #sweep(now: number, clock: unknown): void {
    this.sweepIn = SWEEP_EVERY;
    for (const table of this.#tables.values()) if (table.clock === clock) table.expire(now);
  }

  /** A peek, or the first request of a key with no stored state. */
  #single(table: Table, algorithm: Algorithm, key: string, cost: number, now: number, peek: boolean): Decision {
    if (peek) return algorithm.step(table.find(key) ?? algorithm.create(), now, cost, false);
    const fresh = algorithm.create();
    const result = algorithm.step(fresh, now, cost, true);
    // A denied request changes nothing, so a fresh key that was denied need not be stored.
    if (result.allowed) {
      const refusal = this.#makeRoom(now, table, key);
      if (refusal !== undefined) return refusal;
      table.set(key, fresh);
    }
    return result;
  }

  #composite(tables: Table[], key: string, cost: number, now: number, peek: boolean): Decision {
    const states = tables.map((t) => (peek ? t.find(key) : t.get(key, now)));
    const parts = tables.map((t, i) => t.algorithm.step(states[i] ?? t.algorithm.create(), now, cost, false));
    if (parts.some((p) => !p.allowed)) {
      const step = (i: number) => {
        const t = tables[i] as Table;
        return t.algorithm.step(states[i] ?? t.algorithm.create(), now, 0, false);
      };
      return combine(unconsumed(parts, step));
    }
    const result = combine(parts);
    if (peek) return result;
    // Make room for every new record before committing any member: all or nothing.
    let pending = 0;
    for (const state of states) {
      if (state !== undefined) continue;
      const refusal = this.#makeRoom(now, tables[0] as Table, key, pending++);
      if (refusal !== undefined) return refusal;
    }
    for (let i = 0; i < tables.length; i++) {
      const table = tables[i] as Table;
      const state = states[i] ?? table.algorithm.create();
      table.algorithm.step(state, now, cost, true);
      if (states[i] === undefined) table.set(key, state);
    }
    return result;
  }

  /**
   * Makes room for one new record under `maxKeys`: evicts the least recently used idle record
   * (previous generations first). Records whose key is currently limited are skipped and moved
   * aside so later scans do not revisit them; if no idle record is found the new key is refused,
   * so a flood of new keys can never reset a limited one. `key` itself is never evicted;
   * `pending` counts records this check will insert beyond those already stored.
   * Returns the refusal, or undefined when there is room.
   */
  #makeRoom(now: number, table: Table, key: string, pending = 0): Decision | undefined {
    if (this.maxKeys === Number.POSITIVE_INFINITY || this.size + pending < this.maxKeys) return undefined;
    let scanned = 0;
    let soonest = Number.POSITIVE_INFINITY;
    const limited: Array<[Table, string, unknown]> = [];
    try {
      for (const previous of [true, false]) {
        for (const candidate of this.#tables.values()) {
          // Whether a record is limited is judged at `now`, which only means something on the same clock.
          if (candidate.clock !== table.clock) continue;
          for (const [k, state] of candidate.generation(previous)) {
            if (k === key) continue;
            if (++scanned > EVICTION_SCAN) return this.#refuse(table, soonest);
            const probe = candidate.algorithm.step(state, now, 1, false);
            if (probe.allowed) {
              candidate.delete(k);
              this.#evicted++;
              return undefined;
            }
            soonest = Math.min(soonest, probe.retryAfterMs);
            limited.push([candidate, k, state]);
          }
        }
      }
      return this.#refuse(table, soonest);
    } finally {
      for (const [candidate, k, state] of limited) candidate.touch(k, state);
    }
  }

  #refuse(table: Table, retryAfterMs: number): Decision {
    this.#refused++;
    // The earliest moment a scanned limited key frees up is when room may appear again.
    const retry = Number.isFinite(retryAfterMs) ? retryAfterMs : 1000;
    return decision(false, table.algorithm.limit, 0, retry, retry);
  }
}

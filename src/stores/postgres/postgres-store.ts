/**
 * PostgresStore: exact rate limits for a fleet that has PostgreSQL and no Redis. Written only
 * against the public store kit (`sluice/store`), as any third-party store would be: each call
 * decides with `decideRule` in this process and commits with a compare-and-set on the key's
 * row (postgres-rule.ts); the table is created on first use under an advisory lock (table.ts);
 * expired rows are deleted by the calls that meet them and by a bounded sweep (sweep.ts).
 */
import {
  ArgumentError,
  type BoundRule,
  type Clock,
  checkOnError,
  checkOptions,
  checkTimeoutMs,
  DEFAULT_POLICY,
  describePolicy,
  firstFailureWarning,
  type OnError,
  type RuleBinding,
  type Store,
} from "../author/index.ts";
import { DatabaseClock } from "./database-clock.ts";
import { KnownRows } from "./known-rows.ts";
import { KeyQueue, Lease, storeError } from "./lease.ts";
import type { StoreParts } from "./parts.ts";
import type { PoolLike } from "./pool.ts";
import { PostgresRule } from "./postgres-rule.ts";
import { SWEEP_EVERY, SWEEP_LIMIT, sweep } from "./sweep.ts";
import { checkTable, type TableSql, tableSql } from "./table.ts";
import { WriteBatcher } from "./write-batch.ts";

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /** A `pg` Pool (or anything with its `connect()` and `query()`); it stays yours to end. */
  pool: PoolLike;
  /** The table, `name` or `schema.name` (default `"sluice_limits"`); created on first use. */
  table?: string;
  /**
   * Create the table as UNLOGGED (default false): writes skip the write-ahead log (faster, less
   * I/O), but the table is emptied after a crash of the server and is not replicated to standbys.
   */
  unlogged?: boolean;
  /** Create the table on first use if it is missing (default true); false: `migrate()` or your own DDL made it. */
  createTable?: boolean;
  /**
   * The time a limiter without a clock decides on: `"database"` (default) the server's
   * `clock_timestamp()`, read by the same statement that reads the row, so app servers with
   * skewed clocks decide on one clock; `"local"` this process's clock.
   */
  time?: "database" | "local";
  /** Longest a call may take, pool wait included, in ms (default 1000); then `onError` answers. */
  timeoutMs?: number;
  /** What a call answers when PostgreSQL fails or times out (default `"deny"`). */
  onError?: OnError;
  /**
   * Compare-and-sets a call may lose and retry (another process wrote the key first) before it
   * decides under the row's lock instead, in a transaction that cannot lose (default 2); 0 locks
   * after the first lost one. Every call ends either way; this trades round trips for waiting.
   */
  maxRetries?: number;
  /** Extra time an expired row is kept before the sweep deletes it, in ms (default 0); for skewed `time: "local"` clocks. */
  expiryGraceMs?: number;
}

const OPTIONS = [
  "pool",
  "table",
  "unlogged",
  "createTable",
  "time",
  "timeoutMs",
  "onError",
  "maxRetries",
  "expiryGraceMs",
] as const;

/** Keys whose rows this process remembers, to try their compare-and-set at once (known-rows.ts). */
const KNOWN_ROWS = 10_000;

/** The default of `maxRetries`: a third lost race on a key is taken as a hot key, and locked. */
const DEFAULT_RETRIES = 2;

function checkBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new ArgumentError(`\`${name}\` must be true or false (got ${String(value)})`);
  return value;
}

function checkCount(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new ArgumentError(`\`${name}\` must be a non-negative integer (got ${String(value)})`);
  }
  return value;
}

function checkPool(value: unknown): PoolLike {
  const pool = value as Partial<PoolLike> | null | undefined;
  if (typeof pool?.connect !== "function" || typeof pool.query !== "function") {
    throw new ArgumentError(`\`pool\` must be a pg Pool (with connect() and query()) (got ${String(value)})`);
  }
  return pool as PoolLike;
}

/**
 * Keeps rate-limit state in a PostgreSQL table, shared by every process using the same table
 * and rule names; decisions are exactly those of the in-process store.
 *
 * @example
 * const store = new PostgresStore({ pool: new pg.Pool({ connectionString }) });
 * const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store, name: "api" });
 * const d = await limiter.tryAcquire(userId);
 */
export class PostgresStore implements Store {
  /** Checks return promises. */
  readonly synchronous = false;
  /** Decides `penalty`, `block` and `get` too (decideRule does). */
  readonly flexibleCalls = true;
  /** The table in use. */
  readonly table: string;
  /** The bound on every call, in ms. */
  readonly timeoutMs: number;
  readonly #parts: StoreParts;
  readonly #graceMs: number;
  #created: Promise<void> | undefined;
  #inserted = 0;
  #sweeping: Promise<unknown> | undefined;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    checkOptions(options, "PostgresStore", OPTIONS);
    const pool = checkPool(options.pool);
    this.table = checkTable(options.table);
    this.timeoutMs = checkTimeoutMs(options.timeoutMs);
    const unlogged = checkBoolean("unlogged", options.unlogged, false);
    const createTable = checkBoolean("createTable", options.createTable, true);
    if (options.time !== undefined && options.time !== "database" && options.time !== "local") {
      throw new ArgumentError(`\`time\` must be "database" or "local" (got ${JSON.stringify(options.time)})`);
    }
    this.#graceMs = checkCount("expiryGraceMs", options.expiryGraceMs, 0);
    const onError = checkOnError(options.onError ?? DEFAULT_POLICY);
    const sql = tableSql(this.table, unlogged);
    const databaseClock = new DatabaseClock();
    this.#parts = {
      pool,
      sql,
      timeoutMs: this.timeoutMs,
      maxRetries: checkCount("maxRetries", options.maxRetries, DEFAULT_RETRIES),
      databaseTime: options.time !== "local",
      onError,
      onFailure: firstFailureWarning(`PostgresStore (table ${JSON.stringify(this.table)})`, describePolicy(onError)),
      databaseClock,
      known: new KnownRows(KNOWN_ROWS),
      writes: new WriteBatcher(pool, sql, this.timeoutMs, databaseClock),
      queue: new KeyQueue(),
      ready: createTable ? () => this.#ready() : () => Promise.resolve(),
      inserted: (rule, clock) => this.#inserted_(rule, clock),
    };
  }

  /**
   * Creates the table if it does not exist, under an advisory lock, so processes starting
   * together do not race (CREATE TABLE IF NOT EXISTS alone can fail when two run at once).
   * Checks do this on first use; call it at deploy time to create it ahead (or with `createTable: false`).
   * Rejects with a StoreError.
   */
  async migrate(): Promise<void> {
    await createTableIn(this.#parts.pool, this.#parts.sql);
  }

  /** The first use's creation, shared by concurrent calls; forgotten if it fails, so a later call tries again. */
  #ready(): Promise<void> {
    if (this.#created === undefined) {
      this.#created = this.migrate();
      this.#created.catch(() => {
        this.#created = undefined;
      });
    }
    return this.#created;
  }

  /** Every SWEEP_EVERY rows created, one bounded sweep in the background (never two at once). */
  #inserted_(rule: string, clock: Clock | undefined): void {
    this.#inserted++;
    if (this.#inserted % SWEEP_EVERY !== 0 || this.#sweeping !== undefined || this.#closed) return;
    const scope = { rule: clock === undefined ? null : rule, clock };
    const p = this.#parts;
    this.#sweeping = sweep(p.pool, p.sql, scope, p.databaseTime, this.#graceMs, SWEEP_LIMIT, 10 * this.timeoutMs)
      .catch(() => 0) // a failed sweep only leaves rows for the next one
      .finally(() => {
        this.#sweeping = undefined;
      });
  }

  /**
   * Deletes up to `limit` rows (default 1000) that expired more than `expiryGraceMs` ago, on the
   * database's clock (`time: "database"`) or this process's, and resolves with how many. Checks
   * already sweep as they go; this is for a table no check writes to any more. Rejects with a StoreError.
   */
  async sweep(limit = SWEEP_LIMIT): Promise<number> {
    const count = checkCount("limit", limit, SWEEP_LIMIT);
    const p = this.#parts;
    try {
      await p.ready();
      return await sweep(
        p.pool,
        p.sql,
        { rule: null, clock: undefined },
        p.databaseTime,
        this.#graceMs,
        count,
        10 * this.timeoutMs,
      );
    } catch (error) {
      throw storeError(error);
    }
  }

  /**
   * Waits for a background sweep to finish and starts no more. The store holds no timer and no
   * connection between calls, so a process exits without it; the pool stays yours to `end()`.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#sweeping;
  }

  /** Binds a rule: its row prefix and failure policy are set up once, here. */
  bind(rule: RuleBinding): BoundRule {
    return new PostgresRule(this.#parts, rule);
  }
}

/** Runs the table's creation on one connection, in one transaction under the table's advisory lock. */
async function createTableIn(pool: PoolLike, sql: TableSql): Promise<void> {
  const lease = new Lease(pool);
  try {
    for (const text of sql.create) await lease.query({ text });
  } catch (error) {
    // Leave no aborted transaction on a connection the pool hands out again.
    await lease.query({ text: "ROLLBACK" }).catch(() => undefined);
    throw storeError(error);
  } finally {
    lease.end();
  }
}

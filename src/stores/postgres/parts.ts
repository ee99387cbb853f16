/** What every rule bound to one PostgresStore shares with it. */
import type { Clock, OnError, StoreError } from "../author/index.ts";
import type { DatabaseClock } from "./database-clock.ts";
import type { KnownRows } from "./known-rows.ts";
import type { KeyQueue } from "./lease.ts";
import type { PoolLike } from "./pool.ts";
import type { TableSql } from "./table.ts";
import type { WriteBatcher } from "./write-batch.ts";

/** The store's settings and services, as its bound rules see them. */
export interface StoreParts {
  readonly pool: PoolLike;
  readonly sql: TableSql;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  /** Decide on the database's `clock_timestamp()` when the limiter has no clock. */
  readonly databaseTime: boolean;
  readonly onError: OnError;
  /** Hears every failure (the store's once-only warning). */
  readonly onFailure: (error: StoreError) => void;
  /** The database's clock, as statements report it. */
  readonly databaseClock: DatabaseClock;
  /** Recent keys' rows as last seen. */
  readonly known: KnownRows;
  /** Coalesces calls' first compare-and-sets into multi-row statements. */
  readonly writes: WriteBatcher;
  /** One call per key at a time in this process. */
  readonly queue: KeyQueue;
  /** Resolves once the table exists (created on first use unless `createTable: false`). */
  ready(): Promise<void>;
  /** Counts a row a call created; every so many, a bounded sweep runs (with `clock`'s time for an injected clock). */
  inserted(rule: string, clock: Clock | undefined): void;
}

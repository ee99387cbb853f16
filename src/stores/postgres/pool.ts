/**
 * What PostgresStore needs of a `pg` Pool, described by shape so the package never loads `pg`
 * (an optional peer: `import("sluice/postgres")` works without it) and any Pool with pg's
 * `connect()` / `query()` / `release()` fits (pg's own, or a wrapper around it).
 */

/** One statement: pg's QueryConfig (a `name` makes pg prepare it once per connection). */
export interface Statement {
  /** The SQL text, with `$1`… parameters. */
  readonly text: string;
  /** The parameters. */
  readonly values?: readonly unknown[];
  /** A prepared statement's name (the same name must always carry the same text). */
  readonly name?: string;
}

/** A statement's result, as pg returns it. */
export interface QueryResultLike {
  /** The rows, as objects keyed by column name. */
  readonly rows: Record<string, unknown>[];
  /** Rows the statement touched (null for statements that report none). */
  readonly rowCount: number | null;
}

/** A connection checked out of the pool. */
export interface PoolClientLike {
  /** Runs one statement. */
  query(statement: Statement): Promise<QueryResultLike>;
  /** Returns the connection; with an error (or `true`) the pool closes it instead of reusing it. */
  release(destroy?: Error | boolean): void;
  /**
   * pg's Client is an EventEmitter that emits "error" when its connection dies, even while a
   * statement is out; a checked-out client must have a listener (the pool's is removed while
   * it is out), or the process dies of an unhandled "error" event.
   */
  on?(event: "error", listener: (error: Error) => void): unknown;
  /** Removes a listener `on` added. */
  off?(event: "error", listener: (error: Error) => void): unknown;
}

/** A `pg` Pool, or anything with its `connect()` and `query()`. */
export interface PoolLike {
  /** Checks a connection out (waits while the pool is exhausted). */
  connect(): Promise<PoolClientLike>;
  /** Runs one statement on some connection. */
  query(statement: Statement): Promise<QueryResultLike>;
}

/**
 * The table PostgresStore keeps its records in, and every statement it runs on it. One row per
 * (rule, key): `rule` is the binding's id and the rule's shape (so a record is never read under
 * a shape it was not written for), `record` the record's text (`recordToText`), `blocked_until`
 * a `block` on a rule without a ban (kept beside the record, as src/core/block.ts asks),
 * `expires_at` the instant the row decides like no row at all (`recordFreshAt`, or the block's
 * end if later), and `version` the compare-and-set counter every write checks and bumps.
 *
 * No index on `expires_at`: every decision rewrites it, and an indexed column would turn each of
 * those updates from a HOT update (in place, on the same page, no index entry) into a new
 * index entry. The bounded sweep scans instead (sweep.ts), and the fill factor leaves the room
 * HOT updates need on each page.
 */
import { ArgumentError } from "../author/index.ts";

/** The table when `table` is not given. */
export const DEFAULT_TABLE = "sluice_limits";

/** `name` or `schema.name`, plain identifiers (unquoted, so no case or quoting surprises). */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,47}(\.[A-Za-z_][A-Za-z0-9_]{0,47})?$/;

/** Checks the `table` option, ArgumentError naming what is wrong. */
export function checkTable(value: unknown): string {
  if (value === undefined) return DEFAULT_TABLE;
  if (typeof value !== "string" || !TABLE_NAME.test(value)) {
    throw new ArgumentError(
      `\`table\` must be a table name or schema.name of letters, digits and _ (at most 48 each) (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}

/** A 32-bit FNV-1a hash: names prepared statements and the advisory lock per table. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** The database's time, in whole ms since the epoch (what `time: "database"` decides on). */
const DB_NOW = "floor(extract(epoch from clock_timestamp()) * 1000)::float8";

/** Every statement PostgresStore runs on one table. */
export interface TableSql {
  /** The table name as given. */
  readonly name: string;
  /** The creation, under a transaction-scoped advisory lock so processes starting together do not race. */
  readonly create: readonly string[];
  /** $1 rule, $2 key → one row: `now` (the database's time) and the row's columns (null when absent). */
  readonly read: string;
  /**
   * $1 rule, $2 key, $3 record, $4 blocked_until, $5 expires_at: creates the row if it is
   * absent. Like `update` and `remove`, answers `written` (the version written) and `now`, or
   * no row when the compare-and-set lost.
   */
  readonly insert: string;
  /** $1 rule, $2 key, $3 record, $4 blocked_until, $5 expires_at, $6 version: rewrites the row if at that version. */
  readonly update: string;
  /** $1 rule, $2 key, $3 version: deletes the row if at that version. */
  readonly remove: string;
  /**
   * Many calls' compare-and-sets in one statement (write-batch.ts): arrays $1 rule, $2 key,
   * $3 record, $4 blocked_until, $5 expires_at, $6 version, one element per call. A null
   * version is an `insert`, a null record a `remove`, the rest an `update`, each exactly as
   * the single statements. Answers one row per write that won: `n` (its 1-based position),
   * `written` and `now`; a write absent from the answer lost.
   */
  readonly writeMany: string;
  /**
   * $1 rule, $2 key, inside a transaction: locks the key's row and answers it like `read`,
   * creating a placeholder first when there is none (version 0, expired: it decides as no row),
   * so there is always a row to lock. Whoever else writes the key waits for the transaction.
   */
  readonly lock: string;
  /** $1 rule, $2 key: a reset. */
  readonly reset: string;
  /** $1 limit, $2 before (ms; null: database time − $3), $3 grace ms, $4 rule (null: every rule) → rows deleted. */
  readonly sweep: string;
  /** A prefix unique to this table's statements, for pg's per-connection prepared statements. */
  readonly prepared: string;
}

/** The statements for `table` (validated by {@link checkTable}); `unlogged` creates it UNLOGGED. */
export function tableSql(table: string, unlogged: boolean): TableSql {
  const parts = table.split(".");
  const quoted = parts.map((p) => `"${p}"`).join(".");
  const lock = hash(`sluice:${table}`);
  // A write answers the version it wrote and the database's time, or no row when its
  // compare-and-set lost (then the call reads). Plain statements: a CTE that also answered
  // the row as it stood cost the server about a third more on every write, to save a read
  // only on a lost race.
  const written = `RETURNING version AS written, ${DB_NOW} AS now`;
  const sweepBefore = `coalesce($2::float8, ${DB_NOW} - $3::float8)`;
  return {
    name: table,
    create: [
      "BEGIN",
      `SELECT pg_advisory_xact_lock(${lock})`,
      `CREATE ${unlogged ? "UNLOGGED " : ""}TABLE IF NOT EXISTS ${quoted} (
  rule text NOT NULL,
  key text NOT NULL,
  record text NOT NULL,
  blocked_until float8,
  expires_at float8 NOT NULL,
  version bigint NOT NULL,
  PRIMARY KEY (rule, key)
) WITH (fillfactor = 70)`,
      "COMMIT",
    ],
    read: `SELECT NULL::bigint AS written, ${DB_NOW} AS now, r.record, r.blocked_until, r.expires_at, r.version
FROM (SELECT 1) AS one LEFT JOIN ${quoted} AS r ON r.rule = $1 AND r.key = $2`,
    insert: `INSERT INTO ${quoted} (rule, key, record, blocked_until, expires_at, version)
VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT (rule, key) DO NOTHING ${written}`,
    update: `UPDATE ${quoted} SET record = $3, blocked_until = $4, expires_at = $5, version = version + 1
WHERE rule = $1 AND key = $2 AND version = $6 ${written}`,
    remove: `DELETE FROM ${quoted} WHERE rule = $1 AND key = $2 AND version = $3 ${written}`,
    // ON CONFLICT DO UPDATE either inserts or locks the row that is there, waiting for another
    // transaction writing it (PostgreSQL guarantees one of the two outcomes under READ
    // COMMITTED). SET version = version changes nothing; the call's own write bumps it.
    lock: `INSERT INTO ${quoted} AS r (rule, key, record, blocked_until, expires_at, version)
VALUES ($1, $2, '', NULL, 0, 0) ON CONFLICT (rule, key) DO UPDATE SET version = r.version
RETURNING NULL::bigint AS written, ${DB_NOW} AS now, r.record, r.blocked_until, r.expires_at, r.version`,
    // Data-modifying CTEs all run on one snapshot; the keys of one batch are distinct (one call
    // per key at a time in a process), so no row is touched by two of them.
    writeMany: `WITH i AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::bigint[])
  WITH ORDINALITY AS i(rule, key, record, blocked_until, expires_at, version, n)
), ins AS (
  INSERT INTO ${quoted} (rule, key, record, blocked_until, expires_at, version)
  SELECT rule, key, record, blocked_until, expires_at, 1 FROM i WHERE version IS NULL
  ON CONFLICT (rule, key) DO NOTHING RETURNING rule, key, version
), upd AS (
  UPDATE ${quoted} AS r SET record = i.record, blocked_until = i.blocked_until, expires_at = i.expires_at,
    version = r.version + 1
  FROM i WHERE i.record IS NOT NULL AND r.rule = i.rule AND r.key = i.key AND r.version = i.version
  RETURNING i.n, r.version
), del AS (
  DELETE FROM ${quoted} AS r USING i WHERE i.record IS NULL AND r.rule = i.rule AND r.key = i.key AND r.version = i.version
  RETURNING i.n
)
SELECT w.n, w.version AS written, ${DB_NOW} AS now FROM (
  SELECT i.n, ins.version FROM ins JOIN i ON i.rule = ins.rule AND i.key = ins.key
  UNION ALL SELECT n, version FROM upd
  UNION ALL SELECT n, NULL FROM del
) AS w`,
    reset: `DELETE FROM ${quoted} WHERE rule = $1 AND key = $2`,
    // SKIP LOCKED: a row a check is writing now is left to that check. The outer condition is
    // checked again on the row as locked, so a row a check renewed meanwhile is kept.
    sweep: `DELETE FROM ${quoted} WHERE (rule, key) IN (
  SELECT rule, key FROM ${quoted}
  WHERE expires_at < ${sweepBefore} AND ($4::text IS NULL OR rule = $4)
  LIMIT $1 FOR UPDATE SKIP LOCKED
) AND expires_at < ${sweepBefore}`,
    prepared: `sluice_${(lock >>> 0).toString(36)}_`,
  };
}

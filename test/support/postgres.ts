/**
 * The PostgreSQL the PostgresStore suites use: DATABASE_URL, or the server .ci/run starts on
 * 127.0.0.1:5432 (user postgres, database `test`). Each test file uses its own table name
 * (uniqueTable) and drops it afterwards, so files running side by side never share rows.
 */
import pg from "pg";
import { cannotRun } from "./skip.ts";

/** Where the suites' PostgreSQL is. */
export const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A table name unique to one test file and run. */
export function uniqueTable(label: string): string {
  return `sluice_t_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

/** A pool on the suites' server (`max` connections). */
export function testPool(max = 10): pg.Pool {
  return new pg.Pool({ connectionString: DATABASE_URL, max });
}

/** True when the suites' PostgreSQL answers; otherwise says loudly why `what` cannot run (fails under CI). */
export async function hasPostgres(what: string): Promise<boolean> {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1, connectionTimeoutMillis: 3000 });
  try {
    await pool.query("SELECT 1");
    return true;
  } catch (error) {
    cannotRun(what, `no PostgreSQL at ${DATABASE_URL} (${(error as Error).message})`);
    return false;
  } finally {
    await pool.end();
  }
}

/** Drops `tables` (after a file's tests). */
export async function dropTables(pool: pg.Pool, ...tables: string[]): Promise<void> {
  for (const table of tables) await pool.query(`DROP TABLE IF EXISTS "${table}"`);
}

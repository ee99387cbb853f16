// PostgresStore's locked path, the one a call takes after `maxRetries` lost compare-and-sets.
// Real races, made to happen at a chosen statement: the store's pool is a real pg Pool whose
// connections run a hook before forwarding a statement (another connection changes the row, or
// locks it, right then). With `maxRetries: 0`, the first lost compare-and-set goes locked.
// - The row deleted by another process meanwhile: the locked path creates it under its lock and
//   the call counts as the first of a fresh key.
// - A statement failing inside the locked path's transaction (the server's statement_timeout
//   cancels the lock, held elsewhere): the connection is closed, not handed back to the pool in
//   an open (aborted) transaction still holding what it locked; nothing is counted; calls resume.
import pg from "pg";
import { createLimiter, ManualClock, type StoreError } from "sluice";
import { type PoolLike, PostgresStore, type Statement } from "sluice/postgres";
import { afterAll, describe, expect, it } from "vitest";
import { DATABASE_URL, hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const up = await hasPostgres("PostgresStore's locked path");
const HOUR = 3_600_000;
const spec = { algorithm: "fixed-window", limit: 10, windowMs: HOUR } as const;
const epoch = Date.UTC(2026, 11, 1);

type Hook = (statementName: string) => Promise<void>;

/** `pool`, whose checked-out connections await `hook(name)` before each statement. */
function hooked(pool: pg.Pool, hook: { run: Hook }): PoolLike {
  const config = (s: Statement) => s as pg.QueryConfig;
  return {
    query: (s) => pool.query(config(s)),
    connect: async () => {
      const client = await pool.connect();
      return {
        query: async (s) => {
          await hook.run(s.name ?? s.text);
          return client.query(config(s));
        },
        release: (e?: Error | boolean) => client.release(e),
        on: (event: "error", listener: (error: Error) => void) => client.on(event, listener),
        off: (event: "error", listener: (error: Error) => void) => client.off(event, listener),
      };
    },
  };
}

describe.skipIf(!up)("PostgresStore's locked path", { timeout: 60_000 }, () => {
  const side = testPool(2);
  const table = uniqueTable("locked");
  afterAll(async () => {
    await side.query(`DROP TABLE IF EXISTS "${table}"`);
    await side.end();
  });

  it("the row deleted by another process before the write: created under the lock, counted as a fresh key's first", async () => {
    const pool = testPool(2);
    const hook = { run: (async () => undefined) as Hook };
    try {
      const store = new PostgresStore({ pool: hooked(pool, hook), table, maxRetries: 0 });
      const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "gone" });
      for (let i = 0; i < 3; i++) await limiter.tryAcquire("k");
      const statements: string[] = [];
      hook.run = async (name) => {
        statements.push(name.replace(/^sluice_\w+_/, ""));
        if (name.endsWith("_w") && statements.length === 1) await side.query(`DELETE FROM "${table}"`);
      };
      const d = await limiter.tryAcquire("k");
      // The (batched) update lost (no row), then BEGIN, lock (a placeholder inserted), update, COMMIT.
      expect(statements).toEqual(["w", "BEGIN", "l", "u", "COMMIT"]);
      expect([d.allowed, d.remaining, d.failure]).toEqual([true, 9, undefined]);
      const { rows } = await side.query(`SELECT version, record <> '' AS written FROM "${table}"`);
      expect(rows).toEqual([{ version: "1", written: true }]);
      hook.run = async () => undefined;
      expect((await limiter.tryAcquire("k")).remaining).toBe(8);
    } finally {
      await pool.end();
    }
  });

  it("a statement failing inside its transaction: the connection is closed, no transaction stays open, nothing counted", async () => {
    const app = `sluice-locked-${process.pid}`;
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2, statement_timeout: 300, application_name: app });
    const hook = { run: (async () => undefined) as Hook };
    const locker = await side.connect();
    try {
      const store = new PostgresStore({ pool: hooked(pool, hook), table, maxRetries: 0, timeoutMs: 10_000 });
      const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "stuck" });
      expect((await limiter.tryAcquire("k")).remaining).toBe(9);
      hook.run = async (name) => {
        // Another process writes first (the compare-and-set loses), then holds the row's lock
        // while this call's transaction asks for it: the server cancels that statement.
        if (name.endsWith("_w")) await side.query(`UPDATE "${table}" SET version = version + 1`);
        if (name.endsWith("_l")) {
          await locker.query("BEGIN");
          await locker.query(`SELECT * FROM "${table}" FOR UPDATE`);
        }
      };
      const d = await limiter.tryAcquire("k");
      expect([d.allowed, d.failure?.policy, (d.failure?.error as StoreError | undefined)?.code]).toEqual([
        false,
        "deny",
        "ERR_STORE_TIMEOUT",
      ]);
      hook.run = async () => undefined;
      const open = await side.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
        [app],
      );
      expect(open.rows[0].n).toBe(0);
      await locker.query("COMMIT");
      // The failed call counted nothing; the pool's connections all work.
      const rest = [];
      for (let i = 0; i < 3; i++) rest.push((await limiter.tryAcquire("k")).remaining);
      expect(rest).toEqual([8, 7, 6]);
    } finally {
      await locker.query("ROLLBACK").catch(() => undefined);
      locker.release();
      await pool.end();
    }
  });
});

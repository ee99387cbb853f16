// The table does not grow with idle keys: 1,000 new keys per window over 8 windows, each key
// checked once and never again. Rows that went fresh are deleted by the bounded sweep the
// checks run (no timer), so the row count stays near one window's keys, not the 8,000 seen.
// bench/postgres-growth.mjs runs the same on the database's clock with more keys.
import { createLimiter, ManualClock } from "sluice";
import { PostgresStore } from "sluice/postgres";
import { afterAll, describe, expect, it } from "vitest";
import { dropTables, hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const up = await hasPostgres("PostgresStore table growth");
const WINDOW = 60_000;
const PER_WINDOW = 1000;
const WINDOWS = 8;

describe.skipIf(!up)("PostgresStore table growth", { timeout: 120_000 }, () => {
  const pool = testPool(8);
  const table = uniqueTable("growth");
  afterAll(async () => {
    await dropTables(pool, table);
    await pool.end();
  });

  it(`${PER_WINDOW} new keys per window over ${WINDOWS} windows: rows stay near one window's keys`, async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    // A generous timeoutMs: this test counts rows; a slow moment on a shared machine must not fail it.
    const store = new PostgresStore({ pool, table, timeoutMs: 20_000 });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 5, windowMs: WINDOW },
      { clock, store, name: "g" },
    );
    const rows: number[] = [];
    for (let w = 0; w < WINDOWS; w++) {
      let next = 0;
      const worker = async () => {
        while (next < PER_WINDOW) {
          const d = await limiter.tryAcquire(`w${w}-${next++}`);
          if (!d.allowed || d.failure !== undefined) throw new Error(`a fresh key was refused: ${JSON.stringify(d)}`);
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      rows.push(Number((await pool.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n));
      clock.advance(WINDOW);
    }
    await store.close();
    // The keys of the window just checked, plus at most the previous window's not yet swept.
    expect(Math.max(...rows), `rows after each window: ${rows.join(", ")}`).toBeLessThanOrEqual(2 * PER_WINDOW);
    expect(rows.at(-1)).toBeGreaterThanOrEqual(PER_WINDOW);
  });
});

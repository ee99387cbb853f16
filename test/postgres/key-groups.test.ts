// PostgresStore decides the calls waiting on one key in this process as a group: each on the
// record the previous one left, in order, and the group's last record written once. Many calls
// on a hot key cost a few statements, not one each, and decide exactly as one at a time would;
// a reset made between calls splits them (the calls after it decide on the reset key).
import type pg from "pg";
import { createLimiter, ManualClock } from "sluice";
import { type PoolLike, PostgresStore, type Statement } from "sluice/postgres";
import { afterAll, describe, expect, it } from "vitest";
import { hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const up = await hasPostgres("PostgresStore's key groups");
const spec = { algorithm: "fixed-window", limit: 20, windowMs: 3_600_000 } as const;
const epoch = Date.UTC(2026, 11, 1);

/** `pool`, whose connections log each statement's short name into `seen` and wait for `gate` first. */
function logged(pool: pg.Pool, seen: string[], gate: { open: Promise<void> } = { open: Promise.resolve() }): PoolLike {
  return {
    query: (s) => pool.query(s as pg.QueryConfig),
    connect: async () => {
      const client = await pool.connect();
      return {
        query: async (s: Statement) => {
          seen.push((s.name ?? s.text).replace(/^sluice_\w+_/, ""));
          await gate.open;
          return client.query(s as pg.QueryConfig);
        },
        release: (e?: Error | boolean) => client.release(e),
        on: (event: "error", listener: (error: Error) => void) => client.on(event, listener),
        off: (event: "error", listener: (error: Error) => void) => client.off(event, listener),
      };
    },
  };
}

describe.skipIf(!up)("PostgresStore's key groups", { timeout: 60_000 }, () => {
  const pool = testPool(4);
  const table = uniqueTable("groups");
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });

  it("40 calls at once on one key: the answers of one at a time, in at most 3 writes", async () => {
    const seen: string[] = [];
    const store = new PostgresStore({ pool: logged(pool, seen), table, time: "local" });
    const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "hot" });
    await limiter.tryAcquire("warm-up"); // the table's creation, out of the way
    seen.length = 0;
    const ds = await Promise.all(Array.from({ length: 40 }, () => limiter.tryAcquire("k")));
    expect(ds.map((d) => d.remaining)).toEqual([...Array.from({ length: 20 }, (_, i) => 19 - i), ...Array(20).fill(0)]);
    expect(ds.filter((d) => d.allowed).length).toBe(20);
    // One call at a time would take 20 writes (one per admission).
    expect(seen.filter((n) => n === "w" || n === "i" || n === "u").length).toBeLessThanOrEqual(3);
    expect((await limiter.peek("k")).remaining).toBe(0);
  });

  it("a reset between calls: the calls made after it decide on the reset key", async () => {
    const seen: string[] = [];
    let release = (): void => undefined;
    const gate = { open: Promise.resolve() };
    const store = new PostgresStore({ pool: logged(pool, seen, gate), table, time: "local" });
    const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "reset" });
    await limiter.tryAcquire("warm-up");
    gate.open = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first call's write is held back: the other four wait behind it, then the reset, and
    // five calls made after the reset has been queued.
    const before = Array.from({ length: 5 }, () => limiter.tryAcquire("k"));
    const reset = limiter.reset("k");
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    const after = Array.from({ length: 5 }, () => limiter.tryAcquire("k"));
    release();
    await reset;
    expect((await Promise.all(before)).map((d) => d.remaining)).toEqual([19, 18, 17, 16, 15]);
    expect((await Promise.all(after)).map((d) => d.remaining)).toEqual([19, 18, 17, 16, 15]);
  });
});

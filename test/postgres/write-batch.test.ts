// PostgresStore's batched writes (write-batch.ts) on the real server: the first writes of calls
// made in one turn travel in one statement; each row still wins or loses on its own version; a
// batch the server refused (a SQLSTATE: it committed nothing) has every call retry alone, and
// nothing is lost or counted twice. The pool's connections report each statement's name to a
// hook first (the same real pg Pool underneath).
import type pg from "pg";
import { createLimiter, ManualClock } from "sluice";
import { type PoolLike, PostgresStore, type Statement } from "sluice/postgres";
import { afterAll, describe, expect, it } from "vitest";
import { hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const up = await hasPostgres("PostgresStore's batched writes");
const spec = { algorithm: "fixed-window", limit: 3, windowMs: 3_600_000 } as const;
const epoch = Date.UTC(2026, 11, 1);

/** `pool`, whose connections pass each statement through `edit` (which may log or change it). */
function hooked(pool: pg.Pool, edit: (s: Statement) => Statement): PoolLike {
  return {
    query: (s) => pool.query(s as pg.QueryConfig),
    connect: async () => {
      const client = await pool.connect();
      return {
        query: (s) => client.query(edit(s) as pg.QueryConfig),
        release: (e?: Error | boolean) => client.release(e),
        on: (event: "error", listener: (error: Error) => void) => client.on(event, listener),
        off: (event: "error", listener: (error: Error) => void) => client.off(event, listener),
      };
    },
  };
}

const short = (s: Statement) => (s.name ?? s.text).replace(/^sluice_\w+_/, "");

describe.skipIf(!up)("PostgresStore's batched writes", { timeout: 60_000 }, () => {
  const pool = testPool(4);
  const table = uniqueTable("batch");
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });

  it("8 keys' calls in one turn: one statement; a row another process changed loses alone and retries", async () => {
    const seen: string[] = [];
    const store = new PostgresStore({
      pool: hooked(pool, (s) => {
        seen.push(short(s));
        return s;
      }),
      table,
      time: "local",
    });
    const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "one" });
    await limiter.tryAcquire("warm-up"); // the table's creation, out of the way
    const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
    seen.length = 0;
    const first = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    expect(first.map((d) => d.remaining)).toEqual(Array(8).fill(2));
    expect(seen).toEqual(["w"]);
    // Another process counts one on k3: this process's next write of k3 loses; the others win.
    const other = createLimiter(spec, {
      clock: new ManualClock(epoch),
      store: new PostgresStore({ pool, table, time: "local" }),
      name: "one",
    });
    expect((await other.tryAcquire("k3")).remaining).toBe(1);
    seen.length = 0;
    const second = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    expect(second.map((d) => d.remaining)).toEqual([1, 1, 1, 0, 1, 1, 1, 1]);
    expect(seen).toEqual(["w", "r", "u"]);
  });

  it("a batch the server refuses committed nothing: every call retries alone, each counted once", async () => {
    let refuse = true;
    const seen: string[] = [];
    const store = new PostgresStore({
      pool: hooked(pool, (s) => {
        seen.push(short(s));
        if (!(refuse && short(s) === "w")) return s;
        refuse = false;
        // A value the server cannot read as float8: it answers 22P02 and writes nothing.
        const values = [...(s.values ?? [])];
        values[4] = ["not a number"];
        return { ...s, values };
      }),
      table,
      time: "local",
    });
    const limiter = createLimiter(spec, { clock: new ManualClock(epoch), store, name: "two" });
    const keys = ["a", "b", "c"];
    const first = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    expect(first.map((d) => [d.allowed, d.remaining, d.failure])).toEqual(Array(3).fill([true, 2, undefined]));
    // The refused batch, then per call: a read (no row) and its own insert.
    expect(seen.filter((n) => n === "w")).toEqual(["w"]);
    expect(seen.filter((n) => n === "r").length).toBe(3);
    expect(seen.filter((n) => n === "i").length).toBe(3);
    const again = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    expect(again.map((d) => d.remaining)).toEqual([1, 1, 1]);
  });
});

// PostgresStore's options are checked where they enter (an unknown or bad one throws
// ArgumentError naming it, before any connection is made), and keys PostgreSQL text cannot
// hold as they are (NUL, lone surrogates) still get a row each, apart from every other key.
import { ArgumentError, createLimiter, ManualClock } from "sluice";
import { PostgresStore } from "sluice/postgres";
import { afterAll, describe, expect, it } from "vitest";
import { dropTables, hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

/** A pool that must never be used: options are refused before any call. */
const unused = {
  connect: () => Promise.reject(new Error("no connection expected")),
  query: () => Promise.reject(new Error("no query expected")),
};

describe("PostgresStore options", () => {
  it.each([
    [{ pool: unused, tabel: "x" }, /unknown option `tabel`/],
    [{ pool: unused, table: "a;drop" }, /`table` must be a table name/],
    [{ pool: unused, table: "a.b.c" }, /`table` must be a table name/],
    [{ pool: unused, time: "server" }, /`time` must be "database" or "local"/],
    [{ pool: unused, unlogged: "yes" }, /`unlogged` must be true or false/],
    [{ pool: unused, maxRetries: -1 }, /`maxRetries` must be a non-negative integer/],
    [{ pool: unused, timeoutMs: 0 }, /`timeoutMs` must be a positive number/],
    [{ pool: unused, onError: "ignore" }, /`onError` must be/],
    [{ pool: {} }, /`pool` must be a pg Pool/],
    [undefined, /PostgresStore options must be an object/],
  ])("%o is refused", (options, message) => {
    expect(() => new PostgresStore(options as never)).toThrow(ArgumentError);
    expect(() => new PostgresStore(options as never)).toThrow(message);
  });

  it("accepts schema.name and every documented option", () => {
    const store = new PostgresStore({
      pool: unused,
      table: "public.limits",
      unlogged: true,
      createTable: false,
      time: "local",
      timeoutMs: 500,
      onError: "allow",
      maxRetries: 3,
      expiryGraceMs: 1000,
    });
    expect([store.table, store.timeoutMs]).toEqual(["public.limits", 500]);
  });
});

const up = await hasPostgres("PostgresStore keys");

describe.skipIf(!up)("PostgresStore keys PostgreSQL text cannot hold", () => {
  const pool = testPool(2);
  const table = uniqueTable("keys");
  afterAll(async () => {
    await dropTables(pool, table);
    await pool.end();
  });

  it("NUL, lone surrogates and the escape's own prefix each count apart", async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    const store = new PostgresStore({ pool, table });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
      { clock, store, name: "k" },
    );
    const keys = ["a\0b", "a", "\uD800", "\uFFFD", "\u0001", "\u0001YQBiAA==", "😀"];
    for (const [i, key] of keys.entries()) {
      for (let n = 0; n <= i; n++) await limiter.tryAcquire(key);
    }
    const remaining = [];
    for (const key of keys) remaining.push((await limiter.peek(key)).remaining);
    expect(remaining).toEqual([8, 7, 6, 5, 4, 3, 2]);
  });
});

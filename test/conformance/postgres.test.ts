// The store conformance kit (sluice/testing) on PostgresStore (sluice/postgres), a store written
// only against the public kit: every case on one table of the shared PostgreSQL (the kit gives
// each case its own rule names), and the failure case on a pool for a port nobody listens on.
import pg from "pg";
import { PostgresStore } from "sluice/postgres";
import { storeConformance } from "sluice/testing";
import { afterAll, describe } from "vitest";
import { runCases } from "../support/conformance.ts";
import { dropTables, hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const up = await hasPostgres("PostgresStore conformance");

describe.skipIf(!up)("PostgresStore conformance", () => {
  const pool = testPool(8);
  const table = uniqueTable("kit");
  afterAll(async () => {
    await dropTables(pool, table);
    await pool.end();
  });
  runCases(
    storeConformance({
      name: "PostgresStore",
      create: () => new PostgresStore({ pool, table }),
      failing: () => {
        const dead = new pg.Pool({ host: "127.0.0.1", port: 1, user: "postgres", database: "test" });
        return Object.assign(new PostgresStore({ pool: dead, table, timeoutMs: 500 }), { dead });
      },
      dispose: async (store) => {
        await store.close();
        await (store as { dead?: pg.Pool }).dead?.end();
      },
    }),
  );
});

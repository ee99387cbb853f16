// PostgresStore when PostgreSQL fails: a private server (started here, never the machine's
// shared one) stopped and started again mid-run; a statement stuck behind a row lock; a pool
// whose every connection is taken. The failure policy answers at once or at timeoutMs (never
// a hang), the first failure warns once, nothing is counted twice or lost, and checks resume.
import pg from "pg";
import { createLimiter, type Decision, ManualClock, MemoryStore, StoreError } from "sluice";
import { PostgresStore } from "sluice/postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";
import { type PrivatePostgres, startPrivatePostgres } from "../support/private-postgres.ts";
import { cannotRun } from "../support/skip.ts";
import { warningsOf } from "../support/warnings.ts";

const HOUR = 3_600_000;
const spec = { algorithm: "fixed-window", limit: 10, windowMs: HOUR } as const;
const epoch = Date.UTC(2026, 11, 1);

describe("PostgresStore, its server stopped and started again mid-run", { timeout: 120_000 }, () => {
  let server: PrivatePostgres | undefined;
  let pool: pg.Pool | undefined;
  beforeAll(async () => {
    server = await startPrivatePostgres();
    if (server === undefined) return void cannotRun("the PostgreSQL outage test", "no /usr/lib/postgresql/*/bin here");
    pool = new pg.Pool({ connectionString: server.url, max: 4 });
    // pg requires a listener: idle connections report the server's shutdown here.
    pool.on("error", () => undefined);
  });
  afterAll(async () => {
    await pool?.end();
    server?.destroy();
  });

  it("the policy answers while it is down, nothing is counted twice, and checks resume", async (ctx) => {
    if (server === undefined || pool === undefined) return ctx.skip();
    const clock = new ManualClock(epoch);
    const table = "outage";
    const limiters = {
      deny: createLimiter(spec, { clock, name: "o-deny", store: new PostgresStore({ pool, table, timeoutMs: 2000 }) }),
      allow: createLimiter(spec, {
        clock,
        name: "o-allow",
        store: new PostgresStore({ pool, table, timeoutMs: 2000, onError: "allow" }),
      }),
      throw: createLimiter(spec, {
        clock,
        name: "o-throw",
        store: new PostgresStore({ pool, table, timeoutMs: 2000, onError: "throw" }),
      }),
      fallback: createLimiter(spec, {
        clock,
        name: "o-fallback",
        store: new PostgresStore({ pool, table, timeoutMs: 2000, onError: { fallback: new MemoryStore() } }),
      }),
    };
    for (const limiter of Object.values(limiters)) {
      for (let i = 0; i < 4; i++) expect((await limiter.tryAcquire("k")).allowed).toBe(true);
    }

    server.stop();
    const answers: Record<string, (Decision | string)[]> = {};
    const warnings = await warningsOf(async () => {
      for (const [policy, limiter] of Object.entries(limiters)) {
        answers[policy] = [];
        for (let i = 0; i < 3; i++) {
          answers[policy].push(
            await limiter
              .tryAcquire("k")
              .catch((e: unknown) => (e instanceof StoreError ? `StoreError ${e.code}` : String(e))),
          );
        }
      }
    });
    const summary = (d: Decision | string) => (typeof d === "string" ? d : [d.allowed, d.failure?.policy]);
    expect(Object.fromEntries(Object.entries(answers).map(([p, ds]) => [p, ds.map(summary)]))).toEqual({
      deny: Array(3).fill([false, "deny"]),
      allow: Array(3).fill([true, "allow"]),
      throw: Array(3).fill("StoreError ERR_STORE"),
      fallback: Array(3).fill([true, "fallback"]),
    });
    // One warning per store, however many calls failed.
    expect(warnings.filter((w) => w.code === "SLUICE_STORE_FAILURE").length).toBe(4);

    server.start();
    // The pool drops the connections the restart killed as calls meet them; then calls resume.
    let resumed: Decision | undefined;
    for (let i = 0; i < 50 && resumed === undefined; i++) {
      const d = await limiters.deny.peek("k");
      if (d.failure === undefined) resumed = d;
    }
    // Four counted before the outage, none during it (answered by the policy), none twice.
    for (const limiter of Object.values(limiters)) {
      expect((await limiter.peek("k")).remaining).toBe(5);
      const rest = [];
      for (let i = 0; i < 7; i++) rest.push((await limiter.tryAcquire("k")).allowed);
      expect(rest).toEqual([true, true, true, true, true, true, false]);
    }
  });
});

const up = await hasPostgres("PostgresStore failures on the shared server");

describe.skipIf(!up)("PostgresStore, a statement or a connection that does not come", { timeout: 60_000 }, () => {
  const pool = testPool(4);
  const table = uniqueTable("fail");
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });

  it("a row locked elsewhere: the call is answered at timeoutMs with ERR_STORE_TIMEOUT, then calls resume", async () => {
    const clock = new ManualClock(epoch);
    const store = new PostgresStore({ pool, table, timeoutMs: 300 });
    const limiter = createLimiter(spec, { clock, store, name: "locked" });
    expect((await limiter.tryAcquire("k")).allowed).toBe(true);
    const locker = await pool.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`SELECT * FROM "${table}" FOR UPDATE`);
      const d = await limiter.tryAcquire("k");
      expect([d.allowed, d.failure?.policy, (d.failure?.error as StoreError | undefined)?.code]).toEqual([
        false,
        "deny",
        "ERR_STORE_TIMEOUT",
      ]);
    } finally {
      await locker.query("COMMIT");
      locker.release();
    }
    const after = await limiter.tryAcquire("k");
    expect(after.failure).toBeUndefined();
    expect(after.allowed).toBe(true);
  });

  it("an exhausted pool: the call is answered at timeoutMs, and its connection, when it comes, sends nothing", async () => {
    const small = testPool(1);
    try {
      const clock = new ManualClock(epoch);
      const store = new PostgresStore({ pool: small, table, timeoutMs: 300 });
      const limiter = createLimiter(spec, { clock, store, name: "exhausted" });
      expect((await limiter.tryAcquire("k")).remaining).toBe(9);
      const held = await small.connect();
      const d = await limiter.tryAcquire("k");
      expect([d.allowed, (d.failure?.error as StoreError | undefined)?.code]).toEqual([false, "ERR_STORE_TIMEOUT"]);
      held.release();
      // The abandoned call gets the connection now and hands it straight back: nothing counted
      // (a peek answers what a check would: one more unit taken).
      expect((await limiter.peek("k")).remaining).toBe(8);
      expect((await limiter.tryAcquire("k")).remaining).toBe(8);
    } finally {
      await small.end();
    }
  });
});

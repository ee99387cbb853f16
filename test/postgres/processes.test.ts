// PostgresStore across real processes: 8 node processes, each with its own pool, check the same
// table at once; the admitted total is exactly the limit, on one hot key and per key over 1,000
// keys. Decisions run on the database's clock (no injected clock, `time` left at "database").
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { DATABASE_URL, dropTables, hasPostgres, testPool, uniqueTable } from "../support/postgres.ts";

const run = promisify(execFile);
const up = await hasPostgres("PostgresStore across processes");
const PROCESSES = 8;
const CHECKS = 2000;

/** Runs the children at once; their `allowed` maps summed per key, and every error they saw. */
async function flood(
  table: string,
  keys: number,
  limit: number,
): Promise<{ perKey: Map<string, number>; errors: string[] }> {
  const child = new URL("./check-child.mjs", import.meta.url).pathname;
  const outs = await Promise.all(
    Array.from({ length: PROCESSES }, () =>
      run(process.execPath, [child, DATABASE_URL, table, String(CHECKS), String(keys), String(limit), "8"], {
        maxBuffer: 1 << 24,
      }),
    ),
  );
  const perKey = new Map<string, number>();
  const errors: string[] = [];
  for (const { stdout } of outs) {
    const r = JSON.parse(stdout) as { allowed: Record<string, number>; errors: string[] };
    for (const [key, n] of Object.entries(r.allowed)) perKey.set(key, (perKey.get(key) ?? 0) + n);
    errors.push(...r.errors);
  }
  return { perKey, errors };
}

describe.skipIf(!up)("PostgresStore across 8 processes", { timeout: 240_000 }, () => {
  const pool = testPool(2);
  const tables = [uniqueTable("procs1"), uniqueTable("procsN")];
  afterAll(async () => {
    await dropTables(pool, ...tables);
    await pool.end();
  });

  it(`${PROCESSES} × ${CHECKS} checks on one key with limit 1,000: exactly 1,000 admitted`, async () => {
    ensureBuilt();
    const { perKey, errors } = await flood(tables[0] as string, 1, 1000);
    expect(errors).toEqual([]);
    expect(perKey.get("k0")).toBe(1000);
  });

  it(`${PROCESSES} × ${CHECKS} checks over 1,000 keys with limit 10: exactly 10 admitted per key`, async () => {
    ensureBuilt();
    // Each key is checked 16 times (twice per process), so every key is over its limit.
    const { perKey, errors } = await flood(tables[1] as string, 1000, 10);
    expect(errors).toEqual([]);
    expect(perKey.size).toBe(1000);
    const wrong = [...perKey].filter(([, n]) => n !== 10);
    expect(wrong).toEqual([]);
  });
});

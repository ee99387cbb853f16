// PostgresStore across real processes: 8 node processes, each with its own pool, check the same
// table at once; the admitted total is exactly the limit, on one hot key and per key over 1,000
// keys. Decisions run on the database's clock (no injected clock, `time` left at "database").
// The stress case runs 12 processes, more than the machine's cores, 16 calls in flight each, on
// one key with `maxRetries: 0`: nearly every call loses a compare-and-set and must finish on the
// locked path (before it existed, each such call threw a StoreError, so the case failed at once).
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
  options: { processes?: number; checks?: number; inFlight?: number; maxRetries?: number } = {},
): Promise<{ perKey: Map<string, number>; errors: string[] }> {
  const child = new URL("./check-child.mjs", import.meta.url).pathname;
  const { processes = PROCESSES, checks = CHECKS, inFlight = 8, maxRetries } = options;
  const args = [child, DATABASE_URL, table, String(checks), String(keys), String(limit), String(inFlight)];
  if (maxRetries !== undefined) args.push(String(maxRetries));
  const outs = await Promise.all(
    Array.from({ length: processes }, () => run(process.execPath, args, { maxBuffer: 1 << 24 })),
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
  const tables = [uniqueTable("procs1"), uniqueTable("procsN"), uniqueTable("procsX")];
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

  it("12 processes × 250 checks on one key, 16 in flight each, maxRetries 0: exactly 1,000 admitted, no error", async () => {
    ensureBuilt();
    const { perKey, errors } = await flood(tables[2] as string, 1, 1000, {
      processes: 12,
      checks: 250,
      inFlight: 16,
      maxRetries: 0,
    });
    expect(errors.slice(0, 3)).toEqual([]);
    expect(perKey.get("k0")).toBe(1000);
  });
});

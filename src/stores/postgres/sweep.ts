/**
 * The bounded sweep: rows whose `expires_at` has passed decide like no row, and checks delete
 * the ones they meet, but a key never checked again would leave its row forever. So, with no
 * timer and no cron, every {@link SWEEP_EVERY} rows the store's calls create it deletes at most
 * {@link SWEEP_LIMIT} expired rows in one statement: deletions outpace creations four to one,
 * and the table stays near the number of keys active within their horizon.
 *
 * Instants are only compared on one clock. Rules decided on real time (the database's clock,
 * or this process's) sweep every row; a rule on an injected clock (a ManualClock in tests)
 * sweeps only its own rows, at that clock's time. `expiryGraceMs` is left to rows on top,
 * against app clocks that disagree (`time: "local"`).
 */
import { type Clock, systemClock, withTimeout } from "../author/index.ts";
import { AbandonedError, Lease } from "./lease.ts";
import type { PoolLike } from "./pool.ts";
import type { TableSql } from "./table.ts";

/** Rows created between two sweeps. */
export const SWEEP_EVERY = 250;
/** Most rows one sweep deletes. */
export const SWEEP_LIMIT = 1000;

/** Where and on which clock a sweep runs. */
export interface SweepScope {
  /** Only this `rule` column's rows (an injected clock), or every row (null). */
  readonly rule: string | null;
  /** The injected clock, if any. */
  readonly clock: Clock | undefined;
}

/**
 * Deletes up to `limit` rows expired more than `graceMs` ago and resolves with how many; bounded
 * by `boundMs` (then abandoned: a sweep is never worth waiting on).
 */
export async function sweep(
  pool: PoolLike,
  sql: TableSql,
  scope: SweepScope,
  databaseTime: boolean,
  graceMs: number,
  limit: number,
  boundMs: number,
): Promise<number> {
  const before =
    scope.clock !== undefined ? scope.clock.now() - graceMs : databaseTime ? null : systemClock.now() - graceMs;
  const lease = new Lease(pool);
  const run = lease
    .query({ name: `${sql.prepared}s`, text: sql.sweep, values: [limit, before, graceMs, scope.rule] })
    .then((r) => r.rowCount ?? 0)
    .finally(() => lease.end());
  return withTimeout(run, boundMs, () => {
    lease.end();
    throw new AbandonedError(`the sweep did not finish within ${boundMs} ms`);
  });
}

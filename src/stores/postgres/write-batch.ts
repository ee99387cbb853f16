/**
 * Many calls' compare-and-sets in one statement. A call whose write is its first statement (a
 * new key, or a key this process wrote last: the usual case) hands it here instead of running
 * it alone; the writes handed over in one event-loop turn travel together (the kit's
 * Coalescer), up to MAX_BATCH per statement (`writeMany`, table.ts), on a connection of the
 * batch's own. Each write still wins or loses alone, on its own version check: a lost one
 * answers `undefined` and its call reads and retries on its own connection, as before.
 *
 * Why: a statement's fixed cost (a round trip, the parse/bind/execute exchange, the executor's
 * start, the commit and its WAL flush) dominates a one-row write; 32 rows share one of each.
 *
 * Failures: a statement that failed with an answer of the server (a SQLSTATE: a deadlock
 * between two processes' batches locking rows in different orders, say) committed nothing, so
 * every write of it answers lost and its call retries alone. A failure without one (the
 * connection died) may have committed: every call of the batch gets the StoreError, never a
 * retry, so nothing is counted twice. A batch past `timeoutMs` is abandoned like a call
 * (lease.ts): its connection is closed, or handed back unused if it had not come yet.
 */
import { Coalescer, type Coalescible, timeoutError, withTimeout } from "../author/index.ts";
import { type DatabaseClock, local } from "./database-clock.ts";
import { AbandonedError, Lease, QUERY_CANCELED, storeError } from "./lease.ts";
import type { PoolLike } from "./pool.ts";
import type { TableSql } from "./table.ts";

/** Most writes in one statement: past ~32 rows the statement's fixed cost is already spread thin. */
const MAX_BATCH = 32;

/** One call's compare-and-set: `version` null inserts, `record` null deletes, else updates. */
export interface Write {
  readonly rule: string;
  readonly key: string;
  readonly record: string | null;
  readonly blockedUntil: number | null;
  readonly expiresAt: number;
  readonly version: string | null;
}

/** A won write: the version written (null for a delete), the database's time, and when the statement was sent (local). */
export interface Won {
  readonly written: string | null;
  readonly now: number;
  readonly sentAt: number;
}

/** A write waiting in a batch, with its call's lease (over: the call was answered, send nothing for it). */
interface Entry {
  readonly write: Write;
  readonly call: Lease;
  readonly resolve: (won: Won | undefined) => void;
  readonly reject: (error: unknown) => void;
}

/** One statement's writes. */
class Batch implements Coalescible {
  readonly entries: Entry[] = [];

  get size(): number {
    return this.entries.length;
  }
}

/** Code-unit order (what `<` gives), the same in every process. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Answer row of `writeMany`. */
interface WonRow {
  n: string | number;
  written: string | null;
  now: number;
}

/** Coalesces one turn's compare-and-sets into `writeMany` statements. */
export class WriteBatcher {
  readonly #pool: PoolLike;
  readonly #sql: TableSql;
  readonly #timeoutMs: number;
  readonly #clock: DatabaseClock;
  readonly #batches: Coalescer<0, Batch>;

  constructor(pool: PoolLike, sql: TableSql, timeoutMs: number, clock: DatabaseClock) {
    this.#pool = pool;
    this.#sql = sql;
    this.#timeoutMs = timeoutMs;
    this.#clock = clock;
    this.#batches = new Coalescer(
      () => new Batch(),
      (batch) => void this.#send(batch),
      MAX_BATCH,
    );
  }

  /**
   * Sends `write` with this turn's others: what it wrote if it won, undefined if another
   * process wrote first. `call` is the calling call's lease: once it is over (the call was
   * answered at its timeoutMs), the write is dropped if its batch has not been sent yet.
   */
  write(write: Write, call: Lease): Promise<Won | undefined> {
    const batch = this.#batches.open(0, undefined);
    const answer = new Promise<Won | undefined>((resolve, reject) => {
      batch.entries.push({ write, call, resolve, reject });
    });
    this.#batches.added(0, batch);
    return answer;
  }

  async #send(batch: Batch): Promise<void> {
    const lease = new Lease(this.#pool);
    let sentAt = 0;
    let live: Entry[] = [];
    let rows: WonRow[] = [];
    const run = async () => {
      await lease.connect();
      // Calls answered while the batch waited for a connection (an exhausted pool) send nothing.
      live = batch.entries.filter((e) => !e.call.over);
      // One order for every process's batches (the plan locks rows in input order): two
      // batches sharing keys then wait for each other instead of deadlocking.
      live.sort((a, b) => compare(a.write.key, b.write.key) || compare(a.write.rule, b.write.rule));
      if (live.length === 0) return;
      const w = live.map((e) => e.write);
      sentAt = local();
      const result = await lease.query({
        name: `${this.#sql.prepared}w`,
        text: this.#sql.writeMany,
        values: [
          w.map((x) => x.rule),
          w.map((x) => x.key),
          w.map((x) => x.record),
          w.map((x) => x.blockedUntil),
          w.map((x) => x.expiresAt),
          w.map((x) => x.version),
        ],
      });
      rows = result.rows as unknown as WonRow[];
    };
    try {
      await withTimeout(run(), this.#timeoutMs, () => {
        throw timeoutError("PostgreSQL", this.#timeoutMs);
      });
    } catch (error) {
      const code = (error as { cause?: { code?: unknown } }).cause?.code;
      // An answer of the server (but a timeout, which the failure policy answers): the
      // statement committed nothing, so every write lost.
      if (!(typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && code !== QUERY_CANCELED)) {
        const failure = error instanceof AbandonedError ? error : storeError(error);
        for (const e of batch.entries) e.reject(failure);
        return;
      }
      rows = [];
    } finally {
      lease.end();
    }
    const won: (Won | undefined)[] = new Array(live.length);
    for (const row of rows) won[Number(row.n) - 1] = { written: row.written, now: row.now, sentAt };
    if (rows[0] !== undefined) this.#clock.heard(rows[0].now, sentAt);
    const dropped = new AbandonedError("the call is over");
    for (const e of batch.entries) if (!live.includes(e)) e.reject(dropped);
    for (let i = 0; i < live.length; i++) live[i]?.resolve(won[i]);
  }
}

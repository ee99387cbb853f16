/**
 * One call's connection: checked out of the pool on the call's first statement and returned
 * when the call ends. A call that ran past its `timeoutMs` is abandoned: a connection that
 * arrives late (an exhausted pool) goes straight back unused, so nothing is sent after the
 * call was answered; one abandoned mid-statement is closed rather than reused (pg's
 * `release(error)`), so a hung server cannot keep it, and the pool opens a fresh one. So is one
 * ended inside a transaction (a timeout, or a failed statement, between `begin` and `finish`):
 * closing it is what makes the server roll the transaction back and drop its row locks, with
 * no further statement that could itself hang.
 */
import { StoreError } from "../author/index.ts";
import type { PoolClientLike, PoolLike, QueryResultLike, Statement } from "./pool.ts";

/** Thrown by a statement asked for after the call was abandoned (nobody awaits it any more). */
export class AbandonedError extends Error {}

/** PostgreSQL's SQLSTATE for a statement cancelled by `statement_timeout` (or a cancel request). */
export const QUERY_CANCELED = "57014";

/** A failure of the server, the network or the pool, as the StoreError the failure policy answers. */
export function storeError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const timeout = (error as { code?: unknown } | null)?.code === QUERY_CANCELED;
  return new StoreError(`PostgreSQL: ${message}`, { cause: error, timeout });
}

/** A connection for one call's statements. */
export class Lease {
  readonly #pool: PoolLike;
  #client: PoolClientLike | undefined;
  #busy = false;
  #broken = false;
  #done = false;
  /** Between a `begin` and its `finish`: a transaction (and maybe a row lock) is open. */
  #open = false;
  #started = false;
  /** The connection died while checked out: the statement out (if any) fails on its own; do not reuse it. */
  readonly #died = () => {
    this.#broken = true;
  };

  constructor(pool: PoolLike) {
    this.#pool = pool;
  }

  /** True once a statement was asked for (a connection is, or is being, checked out). */
  get started(): boolean {
    return this.#started;
  }

  /** True once `end` ran: the call was answered (or abandoned); nothing more is sent. */
  get over(): boolean {
    return this.#done;
  }

  /** Checks this call's connection out of the pool, if not yet; AbandonedError if the call ended meanwhile. */
  async connect(): Promise<void> {
    if (this.#done) throw new AbandonedError("the call is over");
    this.#started = true;
    if (this.#client !== undefined) return;
    let client: PoolClientLike;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw storeError(error);
    }
    if (this.#done) {
      client.release();
      throw new AbandonedError("the call is over");
    }
    client.on?.("error", this.#died);
    this.#client = client;
  }

  /** Runs `statement` on this call's connection (checking one out first if needed). */
  async query(statement: Statement): Promise<QueryResultLike> {
    if (this.#client === undefined) await this.connect();
    const client = this.#client as PoolClientLike | undefined;
    if (this.#done || client === undefined) throw new AbandonedError("the call is over");
    this.#busy = true;
    try {
      return await client.query(statement);
    } catch (error) {
      // Not an answer of the server (no SQLSTATE): the connection itself failed; do not reuse it.
      if (!/^[0-9A-Z]{5}$/.test(String((error as { code?: unknown } | null)?.code))) this.#broken = true;
      throw storeError(error);
    } finally {
      this.#busy = false;
    }
  }

  /** Opens a transaction on this call's connection. */
  async begin(): Promise<void> {
    this.#open = true; // set first: a BEGIN abandoned mid-flight may still have opened one
    await this.query({ text: "BEGIN" });
  }

  /** Commits (`commit`) or rolls back the transaction `begin` opened. */
  async finish(commit: boolean): Promise<void> {
    await this.query({ text: commit ? "COMMIT" : "ROLLBACK" });
    this.#open = false;
  }

  /** Returns the connection: reused if idle, closed if a statement or a transaction is still open (abandoned). */
  end(): void {
    if (this.#done) return;
    this.#done = true;
    const client = this.#client;
    this.#client = undefined;
    client?.off?.("error", this.#died);
    if (this.#busy) client?.release(new Error("sluice: statement abandoned at timeoutMs"));
    else if (this.#open) client?.release(new Error("sluice: transaction abandoned"));
    else client?.release(this.#broken ? new Error("sluice: connection failed") : undefined);
  }
}

/** Runs `task` once every earlier task of the same key has settled: one call per key at a time. */
export class KeyQueue {
  readonly #tails = new Map<string, Promise<void>>();

  /** `task()`, after the key's earlier tasks. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key);
    const result = before === undefined ? task() : before.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Keys with a call waiting or running. */
  get size(): number {
    return this.#tails.size;
  }
}

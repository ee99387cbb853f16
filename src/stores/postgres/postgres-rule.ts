/**
 * One rule bound to a PostgresStore. A call reads the key's row, decides with `decideRule` (or
 * `decideBlocked` while a block runs) on this process's CPU, and writes the result back with a
 * compare-and-set on the row's version, in one statement: an INSERT that does nothing if the
 * row appeared meanwhile, or an UPDATE / DELETE `WHERE version = <read>`. A write another
 * process won is noticed by its row count, and the call decides again on what that process
 * wrote, up to `maxRetries` times (then a StoreError, answered by `onError`). Calls on one key
 * in this process go one at a time (KeyQueue), so retries only ever race other processes.
 *
 * A row whose `expires_at` has passed decides as no row at all; a call that leaves a record
 * equivalent to a fresh one deletes the row rather than rewrite it. Reads and denials that
 * change nothing write nothing: one statement.
 */
import {
  type BoundRule,
  blocksBeside,
  type Clock,
  type CompiledRule,
  createRecord,
  type Decision,
  decideBlocked,
  decideRule,
  type FailurePolicy,
  type Operation,
  type RuleBinding,
  recordFreshAt,
  recordFromText,
  recordToText,
  rulePolicy,
  StoreError,
  storesNewRecord,
  systemClock,
  timeoutError,
  withTimeout,
} from "../author/index.ts";
import { Lease } from "./lease.ts";
import type { StoreParts } from "./parts.ts";

/** What Postgres text cannot hold: NUL, and lone surrogates (not UTF-8; paired ones are one code point under /u). */
const UNSTORABLE = /[\0\p{Cs}]/u;

/** `key` as row text: as given, unless Postgres text cannot hold it. */
export function rowKey(key: string): string {
  if (!UNSTORABLE.test(key) && !key.startsWith("\u0001")) return key;
  // Reversible and collision-free: no plain key starts with \u0001.
  return `\u0001${Buffer.from(key, "utf16le").toString("base64")}`;
}

/** The columns a read returns. */
interface Row {
  now: number;
  record: string | null;
  blocked_until: number | null;
  expires_at: number | null;
  version: string | null;
}

/** A rule bound to a PostgresStore. */
export class PostgresRule implements BoundRule {
  readonly #parts: StoreParts;
  readonly #rule: CompiledRule;
  /** The `rule` column: the binding's id and the rule's shape. */
  readonly #ruleId: string;
  readonly #clock: Clock | undefined;
  readonly #policy: FailurePolicy;

  constructor(parts: StoreParts, binding: RuleBinding) {
    this.#parts = parts;
    this.#rule = binding.rule;
    this.#ruleId = JSON.stringify([binding.id, binding.rule.shape]);
    this.#clock = binding.clock;
    this.#policy = rulePolicy(parts.onError, binding, parts.onFailure);
    // Limiters may call these detached, as the memory store allows.
    this.check = this.check.bind(this);
    this.reset = this.reset.bind(this);
    this.release = this.release.bind(this);
  }

  /** Runs `op` within `timeoutMs`, or has the failure policy answer. */
  check(key: string, cost: number, now: number | undefined, op: Operation, at?: number): Promise<Decision> {
    const parts = this.#parts;
    const row = rowKey(key);
    const lease = new Lease(parts.pool);
    const work = parts.queue.run(`${this.#ruleId}\n${row}`, async () => {
      try {
        await parts.ready();
        return await this.#decide(lease, row, cost, now, op, at);
      } finally {
        lease.end();
      }
    });
    return withTimeout(work, parts.timeoutMs, () => {
      lease.end();
      throw timeoutError("PostgreSQL", parts.timeoutMs);
    }).catch((error: unknown) => {
      if (!(error instanceof StoreError)) throw error;
      return this.#policy.decide(key, cost, now, op, error);
    });
  }

  /** Read, decide, compare-and-set; again on what another process wrote, at most `maxRetries` times. */
  async #decide(
    lease: Lease,
    key: string,
    cost: number,
    now: number | undefined,
    op: Operation,
    at: number | undefined,
  ): Promise<Decision> {
    const { sql, maxRetries, databaseTime } = this.#parts;
    const rule = this.#rule;
    const p = sql.prepared;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      const read = await lease.query({ name: `${p}r`, text: sql.read, values: [this.#ruleId, key] });
      const r = read.rows[0] as unknown as Row;
      const t = now ?? (databaseTime ? r.now : (this.#clock ?? systemClock).now());
      const live = r.version !== null && (r.expires_at as number) > t;
      const record = live ? recordFromText(rule, r.record as string) : createRecord(rule);
      const stored = live && r.blocked_until !== null && r.blocked_until > t ? r.blocked_until : -Infinity;
      let until = stored;
      if (op === "block" && blocksBeside(rule)) until = t + cost;
      const blocked = until > t;
      const decision = blocked
        ? decideBlocked(rule, record, t, cost, op, until, at)
        : decideRule(rule, record, t, cost, op, at);
      const text = recordToText(record);
      const freshAt = Math.max(recordFreshAt(rule, record), blocked ? until : -Infinity);
      const block = blocked ? until : null;
      if (r.version === null) {
        // No row: write one only when the call changed what a fresh key would decide.
        if (!(blocked || storesNewRecord(rule, op, decision)) || !(freshAt > t)) return decision;
        const values = [this.#ruleId, key, text, block, freshAt];
        const inserted = await lease.query({ name: `${p}i`, text: sql.insert, values });
        if (inserted.rowCount === 1) {
          this.#parts.inserted(this.#ruleId, this.#clock);
          return decision;
        }
        continue; // another process created it first
      }
      if (live && text === r.record && until === stored) return decision; // nothing changed
      const written =
        freshAt > t
          ? await lease.query({
              name: `${p}u`,
              text: sql.update,
              values: [this.#ruleId, key, text, block, freshAt, r.version],
            })
          : // Equivalent to no row: delete it, the check's own share of keeping the table small.
            await lease.query({ name: `${p}d`, text: sql.remove, values: [this.#ruleId, key, r.version] });
      if (written.rowCount === 1) return decision;
    }
    throw new StoreError(
      `PostgresStore: another process changed the row of this key ${maxRetries + 1} times in a row while this call decided (maxRetries ${maxRetries}); the call was not counted`,
    );
  }

  /** Deletes the key's row (and forgets it in the fallback), within `timeoutMs`; rejects with a StoreError. */
  async reset(key: string): Promise<void> {
    const parts = this.#parts;
    await this.#policy.forget(key);
    const row = rowKey(key);
    const lease = new Lease(parts.pool);
    const work = parts.queue.run(`${this.#ruleId}\n${row}`, async () => {
      try {
        await parts.ready();
        await lease.query({ name: `${parts.sql.prepared}x`, text: parts.sql.reset, values: [this.#ruleId, row] });
      } finally {
        lease.end();
      }
    });
    await withTimeout(work, parts.timeoutMs, () => {
      lease.end();
      throw timeoutError("PostgreSQL", parts.timeoutMs);
    });
  }

  /** Rows stay for other processes and expire on their own; only the fallback's binding is released. */
  release(): void {
    this.#policy.release();
  }
}

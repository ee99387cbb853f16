/**
 * One rule bound to a PostgresStore. A call decides with `decideRule` (or `decideBlocked` while
 * a block runs) on this process's CPU and writes the result back with a compare-and-set on the
 * row's version, in one statement: an INSERT that does nothing if the row exists, or an UPDATE /
 * DELETE `WHERE version = <seen>`. A write another process won answers no row; the call then
 * reads what that process wrote and decides again, up to `maxRetries` times; after that it
 * decides under the row's lock in a transaction, which cannot lose, so every call ends
 * (optimistic retries alone cannot promise that: a slower process can lose every race on a hot
 * key). Calls on one key in this process go one at a time (KeyQueue), so retries only ever race
 * other processes.
 *
 * A call starts from the row as this process last saw it (known-rows.ts): a key this process
 * wrote last is one statement per decision; a new key too (guessed absent). Reads and denials,
 * which write nothing, confirm the row's version with one read. Every statement also answers
 * the database's time (table.ts).
 *
 * A row whose `expires_at` has passed decides as no row at all; a call that leaves a record
 * equivalent to a fresh one deletes the row rather than rewrite it.
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
import { local } from "./database-clock.ts";
import { NO_ROW, type SeenRow } from "./known-rows.ts";
import { AbandonedError, Lease } from "./lease.ts";
import type { StoreParts } from "./parts.ts";

/** What Postgres text cannot hold: NUL, and lone surrogates (not UTF-8; paired ones are one code point under /u). */
const UNSTORABLE = /[\0\p{Cs}]/u;

/** `key` as row text: as given, unless Postgres text cannot hold it. */
export function rowKey(key: string): string {
  if (!UNSTORABLE.test(key) && !key.startsWith("\u0001")) return key;
  // Reversible and collision-free: no plain key starts with \u0001.
  return `\u0001${Buffer.from(key, "utf16le").toString("base64")}`;
}

/** What a read answers (table.ts); a write answers `written` and `now` only. */
interface Answer {
  written: string | null;
  now: number;
  record: string | null;
  blocked_until: number | null;
  expires_at: number | null;
  version: string | null;
}

/** The row a read sent at `sentAt` answered. */
function rowOf(a: Answer, sentAt: number): SeenRow {
  return {
    version: a.version,
    record: a.record,
    blockedUntil: a.blocked_until,
    expiresAt: a.expires_at,
    confirmedAt: sentAt,
  };
}

/** One decision on a row: what it answers and what it would write. */
interface Plan {
  readonly decision: Decision;
  /** The instant it was made at. */
  readonly t: number;
  readonly text: string;
  readonly block: number | null;
  readonly freshAt: number;
  /** It writes nothing (the row, or its absence, already says it). */
  readonly unchanged: boolean;
}

/** One call's statements on its lease; each answer's `now` tunes the database clock. */
class Talk {
  readonly lease: Lease;
  readonly #parts: StoreParts;
  /** The database's time, from this call's latest statement. */
  serverNow: number | undefined;
  /** The local instant the latest statement was sent. */
  sentAt = 0;

  constructor(lease: Lease, parts: StoreParts) {
    this.lease = lease;
    this.#parts = parts;
  }

  /** Runs the prepared statement `name` (a suffix of the table's prefix); its first row, if any. */
  async run(name: string, text: string, values: unknown[]): Promise<Answer | undefined> {
    this.sentAt = local();
    const result = await this.lease.query({ name: this.#parts.sql.prepared + name, text, values });
    const answer = result.rows[0] as unknown as Answer | undefined;
    if (answer !== undefined) {
      this.#parts.databaseClock.heard(answer.now, this.sentAt);
      this.serverNow = answer.now;
    }
    return answer;
  }

  /** Takes the database's time `now` from a statement sent at `sentAt` (a batched write). */
  heard(now: number, sentAt: number): void {
    this.serverNow = now;
    this.sentAt = sentAt;
  }

  /** Runs a statement that always answers the key's row (`read`, or `lock` as "l"), as a SeenRow. */
  async read(text: string, rule: string, key: string, name = "r"): Promise<SeenRow> {
    return rowOf((await this.run(name, text, [rule, key])) as Answer, this.sentAt);
  }
}

/** One call waiting on its key: what it asks, and once a group took it, its answer. */
interface Call {
  readonly cost: number;
  readonly now: number | undefined;
  readonly op: Operation;
  readonly at: number | undefined;
  /** The local instant it was made. */
  readonly began: number;
  /** The calls waiting on the key with it, itself included; the first of them to run decides them all. */
  readonly group: Call[];
  answer: Promise<Decision> | undefined;
}

/** A rule bound to a PostgresStore. */
export class PostgresRule implements BoundRule {
  readonly #parts: StoreParts;
  /** Calls waiting per key (slot), in order: the next to run decides them all. */
  readonly #waiting = new Map<string, Call[]>();
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
    const slot = `${this.#ruleId}\n${row}`;
    const lease = new Lease(parts.pool);
    let group = this.#waiting.get(slot);
    if (group === undefined) {
      group = [];
      this.#waiting.set(slot, group);
    }
    const call: Call = { cost, now, op, at, began: local(), group, answer: undefined };
    group.push(call);
    const work = parts.queue.run(slot, async () => {
      const taken = call.answer;
      if (taken !== undefined) {
        // Decided with an earlier call's group. That call's connection was given up at its
        // timeoutMs: this one is answered as timed out too, by the failure policy.
        return await taken.catch((error: unknown) => {
          throw error instanceof AbandonedError ? timeoutError("PostgreSQL", parts.timeoutMs) : error;
        });
      }
      // This call runs first of the calls waiting on the key: it decides them all, in order.
      const calls = call.group;
      if (this.#waiting.get(slot) === calls) this.#waiting.delete(slot);
      const answers = (async () => {
        try {
          await parts.ready();
          return await this.#decide(lease, row, slot, calls);
        } finally {
          lease.end();
        }
      })();
      let own: Promise<Decision> | undefined;
      calls.forEach((c, i) => {
        const answer = answers.then((ds) => ds[i] as Decision);
        c.answer = answer;
        // The others' answers are awaited by their own queued tasks, which run next.
        if (c === call) own = answer;
        else answer.catch(() => undefined);
      });
      return await (own as Promise<Decision>);
    });
    return withTimeout(work, parts.timeoutMs, () => {
      lease.end();
      throw timeoutError("PostgreSQL", parts.timeoutMs);
    }).catch((error: unknown) => {
      if (!(error instanceof StoreError)) throw error;
      return this.#policy.decide(key, cost, now, op, error, at);
    });
  }

  /**
   * Decides `calls` (every call on the key that waited in this process, in order) as one:
   * each on the record the previous one left, and the last record written once, a
   * compare-and-set; on a lost one, read and decide them all again, at most `maxRetries`
   * times, then once more under the row's lock (#decideLocked), which cannot lose. The first
   * decision is made on the row as this process last saw it (no row, if it saw none): when
   * that is still the row, the group is one statement, or none for decisions that write
   * nothing on a row a statement sent since the latest call of the group began showed.
   * A hot key's queue is thus one round trip per group, not one per call.
   */
  async #decide(lease: Lease, key: string, slot: string, calls: Call[]): Promise<Decision[]> {
    const { sql, maxRetries, databaseTime, databaseClock, known } = this.#parts;
    const id = this.#ruleId;
    let began = Number.NEGATIVE_INFINITY;
    for (const c of calls) began = Math.max(began, c.began);
    // What the calls decide on: the row as last seen, confirmed if a statement sent since the
    // latest call began showed it (a read of this group, or of one before it on this key).
    let seen: SeenRow | undefined = known.get(slot) ?? NO_ROW;
    let confirmed = seen.confirmedAt >= began;
    // Before any statement has answered, the database's time is unknown: read it with the row.
    if (databaseTime && !databaseClock.known && calls.some((c) => c.now === undefined)) seen = undefined;
    const talk = new Talk(lease, this.#parts);
    for (let attempt = 0; attempt <= maxRetries; ) {
      if (seen === undefined) {
        seen = await talk.read(sql.read, id, key);
        known.set(slot, seen);
        confirmed = true;
      }
      const run = this.#planAll(seen, calls, talk);
      const { last } = run;
      if (last === undefined || (seen.version === null && last.version === null)) {
        if (confirmed) return run.decisions;
        seen = undefined; // decided on a guess that writes nothing: confirm it with a read
        continue;
      }
      let answer: { written: string | null } | undefined;
      if (!talk.lease.started) {
        // The call's first statement: it travels with this turn's other writes (write-batch.ts).
        const won = await this.#parts.writes.write(
          {
            rule: id,
            key,
            record: last.version === null ? null : (last.record as string),
            blockedUntil: last.blockedUntil,
            expiresAt: last.expiresAt ?? 0,
            version: seen.version,
          },
          talk.lease,
        );
        if (won !== undefined) talk.heard(won.now, won.sentAt);
        answer = won;
      } else if (seen.version === null) {
        answer = await talk.run("i", sql.insert, [id, key, last.record, last.blockedUntil, last.expiresAt]);
      } else if (last.version !== null) {
        answer = await talk.run("u", sql.update, [
          id,
          key,
          last.record,
          last.blockedUntil,
          last.expiresAt,
          seen.version,
        ]);
      }
      // Equivalent to no row: delete it, the call's own share of keeping the table small.
      else answer = await talk.run("d", sql.remove, [id, key, seen.version]);
      if (answer !== undefined) {
        this.#wrote(slot, last, seen.version === null, answer.written, talk.sentAt);
        return run.decisions;
      }
      attempt++;
      seen = undefined; // another process wrote first: read what it wrote, decide again
    }
    return await this.#decideLocked(talk, key, slot, calls);
  }

  /**
   * The path that cannot lose, for calls that lost `maxRetries + 1` compare-and-sets (a hot
   * key, or a process whose round trips run slower than its rivals'): in one transaction on
   * the call's connection, lock the row (creating a placeholder if there is none, so there is
   * always one to lock), decide on it, write, commit. Every other write of the key waits for the
   * commit, and so loses its compare-and-set to this one; that call's next try sees this write.
   * Four round trips instead of one, so only after lost races. Calls that write nothing roll
   * back (undoing a placeholder). A timeout or a failure inside the transaction closes the
   * connection (Lease.end), which rolls back and drops the lock on the server.
   */
  async #decideLocked(talk: Talk, key: string, slot: string, calls: Call[]): Promise<Decision[]> {
    const { sql, known } = this.#parts;
    const id = this.#ruleId;
    await talk.lease.begin();
    const locked = await talk.read(sql.lock, id, key, "l");
    // The placeholder (version 0) decides as no row; writing over it is the key's creation.
    const created = locked.version === "0";
    const seen = created ? { ...NO_ROW, confirmedAt: locked.confirmedAt } : locked;
    const { decisions, last } = this.#planAll(seen, calls, talk);
    if (last === undefined || (created && last.version === null)) {
      await talk.lease.finish(false);
      known.set(slot, seen);
      return decisions;
    }
    const answer =
      last.version !== null
        ? await talk.run("u", sql.update, [id, key, last.record, last.blockedUntil, last.expiresAt, locked.version])
        : await talk.run("d", sql.remove, [id, key, locked.version]);
    // Cannot happen while the lock is held; a bug rather than a race if it does.
    if (answer === undefined) throw new StoreError("PostgresStore: the locked row changed under its lock");
    await talk.lease.finish(true);
    this.#wrote(slot, last, created, answer.written, talk.sentAt);
    return decisions;
  }

  /** The instant a call decides at: the caller's, the database's (as last heard), or the rule's clock. */
  #time(now: number | undefined, talk: Talk): number {
    if (now !== undefined) return now;
    if (this.#parts.databaseTime) return talk.serverNow ?? this.#parts.databaseClock.now();
    return (this.#clock ?? systemClock).now();
  }

  /**
   * Decides `calls` in order on `seen`, each on the row the previous one left: their
   * decisions, and the row the last change left (`last`: version null for no row, a non-null
   * version for a row to write; undefined when no call changed anything).
   */
  #planAll(seen: SeenRow, calls: Call[], talk: Talk): { decisions: Decision[]; last: SeenRow | undefined } {
    const decisions: Decision[] = [];
    let row = seen;
    let last: SeenRow | undefined;
    for (const c of calls) {
      const plan = this.#plan(row, this.#time(c.now, talk), c.cost, c.op, c.at);
      decisions.push(plan.decision);
      if (plan.unchanged) continue;
      // The version only marks a row here; the write checks `seen`'s.
      row =
        plan.freshAt > plan.t
          ? {
              version: seen.version ?? "0",
              record: plan.text,
              blockedUntil: plan.block,
              expiresAt: plan.freshAt,
              confirmedAt: seen.confirmedAt,
            }
          : { ...NO_ROW, confirmedAt: seen.confirmedAt };
      last = row;
    }
    return { decisions, last };
  }

  /** Decides on `seen` at `t`: the decision, what to write, and whether to write at all. */
  #plan(seen: SeenRow, t: number, cost: number, op: Operation, at: number | undefined): Plan {
    const rule = this.#rule;
    const live = seen.version !== null && (seen.expiresAt as number) > t;
    const record = live ? recordFromText(rule, seen.record as string) : createRecord(rule);
    const stored = live && seen.blockedUntil !== null && seen.blockedUntil > t ? seen.blockedUntil : -Infinity;
    let until = stored;
    if (op === "block" && blocksBeside(rule)) until = t + cost;
    const blocked = until > t;
    const decision = blocked
      ? decideBlocked(rule, record, t, cost, op, until, at)
      : decideRule(rule, record, t, cost, op, at);
    const text = recordToText(record);
    const freshAt = Math.max(recordFreshAt(rule, record), blocked ? until : -Infinity);
    const unchanged =
      seen.version === null
        ? // No row: one is written only when the call changed what a fresh key would decide.
          !(blocked || storesNewRecord(rule, op, decision)) || !(freshAt > t)
        : live && text === seen.record && until === stored;
    return { decision, t, text, block: blocked ? until : null, freshAt, unchanged };
  }

  /** Remembers what a won write left (`last`: a row, or none after a delete); counts a row created. */
  #wrote(slot: string, last: SeenRow, created: boolean, version: string | null, sentAt: number): void {
    this.#parts.known.set(
      slot,
      last.version !== null ? { ...last, version, confirmedAt: sentAt } : { ...NO_ROW, confirmedAt: sentAt },
    );
    if (created) this.#parts.inserted(this.#ruleId, this.#clock);
  }

  /** Deletes the key's row (and forgets it in the fallback), within `timeoutMs`; rejects with a StoreError. */
  async reset(key: string): Promise<void> {
    const parts = this.#parts;
    await this.#policy.forget(key);
    const row = rowKey(key);
    const slot = `${this.#ruleId}\n${row}`;
    parts.known.delete(slot);
    // Calls made after the reset wait behind it, in a group of their own.
    this.#waiting.delete(slot);
    const lease = new Lease(parts.pool);
    const work = parts.queue.run(slot, async () => {
      try {
        await parts.ready();
        parts.known.delete(slot);
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

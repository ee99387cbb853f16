/**
 * Coalescing. Checks issued in the same event-loop turn are sent together: one script call
 * per Cluster slot (every check on standalone), at most `MAX_BATCH` checks each, so 64 checks
 * in flight cost a handful of round trips and script invocations instead of 64. The script
 * decides them in order, each atomically. Each rule's parameters travel once per batch; a
 * check adds its keys and 4 short arguments (none when every check of the batch has the same
 * rule, op, cost and time source: the usual case, sent once). A reply of NOSCRIPT means the script did not run,
 * so re-sending it with EVAL (which also caches it) cannot count anything twice; any other
 * error fails the batch without a retry. One timer bounds each batch by `timeoutMs`.
 *
 * Per check the work is O(1) and closure-free: one pending record, pushes onto the batch's
 * arrays, one promise whose resolver is captured without a per-check function.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { Operation } from "../../decide-rule.ts";
import { StoreError } from "../../errors.ts";
import type { Breaker } from "./breaker.ts";
import type { RedisCommands } from "./client.ts";
import { decodeCheck, type ReplyLayout } from "./reply.ts";
import type { CheckScript } from "./script.ts";

/**
 * Most checks decided by one script call. A full batch is sent at once, mid-turn, so with many
 * checks in flight two or more batches overlap: Redis decides one while this process decodes
 * the previous reply and builds the next, instead of each side waiting for the other (64 in
 * flight: ~1.5x the throughput of one 64-check batch per turn). Smaller batches would pay the
 * fixed cost of a script call (~10 µs) too often. It also bounds how long one call holds Redis.
 */
const MAX_BATCH = 32;

/** What the batcher needs of a bound rule. */
export interface BatchRule extends ReplyLayout {
  /** The rule's script parameters: member count, ban policy, then code and two parameters per member. */
  readonly descriptor: readonly string[];
  /** Key infixes of a check (`prefix{tag}` + infix + user key): one, the record's. */
  readonly infixes: readonly string[];
  /** The decision of a check Redis could not make, by the rule's failure policy. */
  fail(key: string, cost: number, op: Operation, error: StoreError): Promise<Decision>;
  /** Scratch for the batcher: the batch this rule was last added to, and its index there. */
  batch: Batch | undefined;
  batchIndex: string;
}

/** The op codes of the script (check.lua). */
const OP_CODES: Record<Operation, string> = { check: "c", peek: "p", refund: "r" };

/** One check waiting for its batch's reply. */
interface Pending {
  rule: BatchRule;
  key: string;
  cost: number;
  op: Operation;
  resolve: (value: Decision | Promise<Decision>) => void;
}

/** Checks bound for one script call. */
export class Batch {
  readonly keys: string[] = [];
  readonly rules: string[] = [];
  /** Rule index, op, cost and now of every check, written out once the checks stop being uniform. */
  readonly checks: string[] = [];
  readonly pending: Pending[] = [];
  ruleCount = 0;
  /** While true, every check so far has the first check's rule index, op, cost and now (below). */
  uniform = true;
  rule0 = "";
  op0 = "";
  cost0 = "";
  now0 = "";
}

// The promise executor is shared: it parks each resolver here, so no closure is made per check.
let parked: ((value: Decision | Promise<Decision>) => void) | undefined;
const park = (resolve: (value: Decision | Promise<Decision>) => void) => {
  parked = resolve;
};

/** Queues checks and sends them as batched script calls. */
export class Batcher {
  readonly #commands: RedisCommands;
  readonly #script: CheckScript;
  readonly #breaker: Breaker;
  readonly #timeoutMs: number;
  readonly #grace: string;
  /** Open batches by Cluster slot (only slot 0 on standalone). */
  #open = new Map<number, Batch>();
  #scheduled = false;
  readonly #flush = () => this.#flushAll();

  constructor(commands: RedisCommands, script: CheckScript, breaker: Breaker, timeoutMs: number, graceMs: number) {
    this.#commands = commands;
    this.#script = script;
    this.#breaker = breaker;
    this.#timeoutMs = timeoutMs;
    this.#grace = String(graceMs);
  }

  /**
   * Queues one check of `rule` for `key` (its keys start with `head`, `prefix{tag}`) in slot
   * group `group`; `now` is the injected time as text, or "" for Redis TIME.
   */
  submit(rule: BatchRule, group: number, head: string, key: string, cost: number, op: Operation, now: string) {
    let batch = this.#open.get(group);
    if (batch === undefined) {
      batch = new Batch();
      this.#open.set(group, batch);
    }
    if (rule.batch !== batch) {
      rule.batch = batch;
      rule.batchIndex = String(++batch.ruleCount);
      for (const d of rule.descriptor) batch.rules.push(d);
    }
    for (const infix of rule.infixes) batch.keys.push(head + infix + key);
    const costText = cost === 1 ? "1" : String(cost);
    const opCode = OP_CODES[op];
    if (batch.pending.length === 0) {
      batch.rule0 = rule.batchIndex;
      batch.op0 = opCode;
      batch.cost0 = costText;
      batch.now0 = now;
    } else if (
      batch.uniform &&
      (rule.batchIndex !== batch.rule0 || opCode !== batch.op0 || costText !== batch.cost0 || now !== batch.now0)
    ) {
      batch.uniform = false;
      for (let i = 0; i < batch.pending.length; i++) batch.checks.push(batch.rule0, batch.op0, batch.cost0, batch.now0);
    }
    if (!batch.uniform) batch.checks.push(rule.batchIndex, opCode, costText, now);
    const promise = new Promise<Decision>(park);
    batch.pending.push({ rule, key, cost, op, resolve: parked as Pending["resolve"] });
    if (batch.pending.length >= MAX_BATCH) {
      this.#open.delete(group);
      this.#send(batch);
    } else if (!this.#scheduled) {
      this.#scheduled = true;
      // setImmediate (not a microtask) so checks issued by the continuations of one socket
      // read, several promise hops deep, all land in the same batch.
      setImmediate(this.#flush);
    }
    return promise;
  }

  #flushAll(): void {
    this.#scheduled = false;
    const open = this.#open;
    this.#open = new Map();
    for (const batch of open.values()) this.#send(batch);
  }

  #send(batch: Batch): void {
    for (const p of batch.pending) if (p.rule.batch === batch) p.rule.batch = undefined;
    // Uniform checks send their rule, op, cost and now once (see check.lua).
    const tail = batch.uniform ? ["=", batch.rule0, batch.op0, batch.cost0, batch.now0] : batch.checks;
    const args = [this.#grace, String(batch.ruleCount)].concat(batch.rules, tail);
    const keys = batch.keys;
    let settled = false;
    const fail = (error: StoreError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.#breaker.failure();
      for (const p of batch.pending) p.resolve(p.rule.fail(p.key, p.cost, p.op, error));
    };
    const timer = setTimeout(() => {
      fail(new StoreError(`Redis did not answer within timeoutMs (${this.#timeoutMs} ms)`, { timeout: true }));
    }, this.#timeoutMs);
    const { sha, source } = this.#script;
    this.#commands
      .evalsha(sha, keys, args)
      .catch((error: unknown) => {
        // NOSCRIPT: the script did not run (cache flushed, restart, failover), so EVAL is safe —
        // unless the callers were already answered by the failure policy (timeout): running it
        // now would count requests that were told something else.
        if (!settled && error instanceof Error && error.message.startsWith("NOSCRIPT")) {
          return this.#commands.eval(source, keys, args);
        }
        throw error;
      })
      .then(
        (reply) => {
          if (settled) return;
          const error = this.#deliver(batch.pending, reply);
          if (error !== undefined) {
            fail(error);
            return;
          }
          settled = true;
          clearTimeout(timer);
          this.#breaker.success();
        },
        (error: unknown) => {
          fail(
            error instanceof StoreError
              ? error
              : new StoreError(`Redis check failed: ${error instanceof Error ? error.message : String(error)}`, {
                  cause: error,
                }),
          );
        },
      );
  }

  /** Decodes the reply and settles every check, or returns the error for a malformed reply (settling none). */
  #deliver(pending: readonly Pending[], reply: unknown): StoreError | undefined {
    let expected = 0;
    for (const p of pending) expected += p.rule.width;
    if (!Array.isArray(reply) || reply.length !== expected) {
      const got = Array.isArray(reply) ? `an array of ${reply.length}` : typeof reply;
      return new StoreError(`unexpected reply from the sluice script: expected ${expected} values, got ${got}`);
    }
    const decisions: Array<Decision | StoreError> = [];
    let at = 0;
    try {
      for (const p of pending) {
        decisions.push(decodeCheck(reply, at, p.rule));
        at += p.rule.width;
      }
    } catch (error) {
      return error as StoreError;
    }
    for (let i = 0; i < pending.length; i++) {
      const p = pending[i] as Pending;
      const d = decisions[i] as Decision | StoreError;
      p.resolve(d instanceof StoreError ? p.rule.fail(p.key, p.cost, p.op, d) : d);
    }
    return undefined;
  }
}

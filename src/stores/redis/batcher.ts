/**
 * The Redis transport of the remote plumbing. Checks issued in the same event-loop turn are
 * coalesced (../remote/coalescer.ts) into one script call per Cluster slot (every check on
 * standalone), at most `MAX_BATCH` checks each, so 64 checks in flight cost a handful of round
 * trips and script invocations instead of 64. The script decides them in order, each
 * atomically. Each rule's parameters travel once per batch; a check adds its keys and 3 short
 * arguments (none when every check of the batch has the same rule, cost and time source: the
 * usual case, sent once).
 *
 * Errors that prove the script did not run are recovered within `timeoutMs`, never after it:
 * a missing function or script → loaded, or sent with EVAL (check-call.ts); TRYAGAIN, ASK, MOVED and
 * CLUSTERDOWN (a slot being migrated or a cluster reconfiguring: some keys of a multi-key call
 * are elsewhere) → the batch is split into one call per check, and a single check is retried
 * after a short pause. Any other error fails the batch without a retry (it may have run), so
 * nothing is ever counted twice. Once `timeoutMs` has passed and the callers were answered by
 * the failure policy, nothing more is sent for the batch (../remote/exchange.ts).
 *
 * Per check the work is O(1) and closure-free: one pending record, pushes onto the batch's
 * arrays, one promise whose resolver is captured without a per-check function. All scratch
 * state (rule indexes, parked resolvers) lives in the Batch and the Batcher, never on the
 * shared rule objects.
 */
import { type Decision, stampAt } from "../../algorithms/decision.ts";
import type { Operation } from "../../core/decide-rule.ts";
import { StoreError } from "../../core/errors.ts";
import { Coalescer } from "../remote/coalescer.ts";
import { exchange } from "../remote/exchange.ts";
import { localMs } from "../remote/with-timeout.ts";
import { Batch, type BatchRule, type Pending } from "./batch.ts";
import type { CheckCaller } from "./check-call.ts";
import type { NodeState } from "./nodes.ts";
import { decodeCheck, replyFigures } from "./reply.ts";

/**
 * Most checks decided by one script call. A full batch is sent at once, mid-turn, so with many
 * checks in flight two or more batches overlap: Redis decides one while this process decodes
 * the previous reply and builds the next, instead of each side waiting for the other (64 in
 * flight: ~1.5x the throughput of one 64-check batch per turn). Smaller batches would pay the
 * fixed cost of a script call (~10 µs) too often. It also bounds how long one call holds Redis.
 */
const MAX_BATCH = 32;

/** Pause before re-sending a single check that met TRYAGAIN/CLUSTERDOWN (a migration step is ~ms). */
const RETRY_PAUSE_MS = 5;

/**
 * Share of `timeoutMs` kept for a reply's way back: a call must start in Redis within the
 * first 80% of `timeoutMs` (see the deadline guard in script.ts), so a check Redis counted is
 * answered by Redis unless the reply itself takes longer than the remaining 20% to arrive.
 */
const REPLY_MARGIN = 0.2;

/**
 * Errors that prove a script call did not run and that a smaller call (one check) may get
 * past, so sending again cannot count twice (a missing function or script, the other kind, is cured in check-call.ts).
 */
const SPLIT = /^(?:ReplyError: )?(?:TRYAGAIN|ASK|MOVED|CLUSTERDOWN)\b|^Too many Cluster redirections/;

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Where a batch is in its `timeoutMs`: once late, its callers were answered and nothing more is sent. */
interface Attempt {
  late: boolean;
  /** Local monotonic time (see localMs) when the batch was first sent. */
  readonly sentAt: number;
}

/** Queues checks and sends them as batched script calls. */
export class Batcher {
  readonly #caller: CheckCaller;
  readonly #timeoutMs: number;
  /** How long after sending a call may still start in Redis: `timeoutMs` less a margin for the reply's way back. */
  readonly #budgetMs: number;
  readonly #grace: string;
  /** Open batches by Cluster slot (only slot 0 on standalone), each made for its slot's node. */
  readonly #batches = new Coalescer<number, Batch, NodeState>(
    (node) => new Batch(node),
    (batch) => this.#dispatch(batch),
    MAX_BATCH,
  );
  // The promise executor is shared: it parks each resolver here, so no closure is made per check.
  #parked: Pending["resolve"] | undefined;
  readonly #park = (resolve: Pending["resolve"]) => {
    this.#parked = resolve;
  };

  constructor(caller: CheckCaller, timeoutMs: number, graceMs: number) {
    this.#caller = caller;
    this.#timeoutMs = timeoutMs;
    this.#budgetMs = timeoutMs - Math.max(1, Math.floor(timeoutMs * REPLY_MARGIN));
    this.#grace = String(graceMs);
  }

  /**
   * Queues one check of `rule` for `key` (its keys start with `head`, `prefix{tag}`) in slot
   * `group`, served by `node`; `now` is the injected time, or undefined for Redis TIME.
   */
  submit(
    rule: BatchRule,
    group: number,
    node: NodeState,
    head: string,
    key: string,
    cost: number,
    op: Operation,
    now: number | undefined,
    at?: number,
  ): Promise<Decision> {
    const batch = this.#batches.open(group, node);
    const promise = new Promise<Decision>(this.#park);
    batch.add({ rule, head, key, cost, op, now, at, resolve: this.#parked as Pending["resolve"], done: false });
    this.#batches.added(group, batch);
    return promise;
  }

  /** Sends a batch under one `timeoutMs`; on failure or timeout every unanswered check gets the policy's answer. */
  #dispatch(batch: Batch): void {
    const attempt: Attempt = { late: false, sentAt: localMs() };
    // Success is recorded in #deliver, before the callers hear of it (they may read the breaker).
    exchange(this.#run(batch, attempt), this.#timeoutMs, "Redis", batch.node.breaker, {
      late: () => {
        attempt.late = true;
      },
      reply: () => undefined,
      fail: (failure) => {
        for (const p of batch.pending) {
          if (p.done) continue;
          p.done = true;
          p.resolve(p.rule.fail(p.key, p.cost, p.now, p.op, failure, p.at));
        }
      },
    });
  }

  /** Runs `batch` until every check is answered; rejects when it cannot be (the rest fail by policy). */
  async #run(batch: Batch, attempt: Attempt): Promise<void> {
    let reply: unknown;
    // Whether this call's deadline rests on an assumed clock offset (the node never answered).
    const assumed = !batch.node.known;
    try {
      reply = await this.#call(batch, attempt);
    } catch (error) {
      if (attempt.late || !SPLIT.test(message(error))) throw error;
      // Some keys of the slot are elsewhere (migrating) or the slot is moving: the script did
      // not run. Checks of different keys go separately; a single one is retried shortly.
      if (batch.pending.length > 1) {
        // Every part settles before the batch may fail: a failure declared while another part
        // is still in flight would answer by policy a check that Redis may yet count.
        const parts = await Promise.allSettled(
          batch.pending.map((p) => {
            const single = new Batch(batch.node);
            single.add(p);
            return this.#run(single, attempt);
          }),
        );
        for (const part of parts) if (part.status === "rejected") throw part.reason;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
      if (attempt.late) return;
      return this.#run(batch, attempt);
    }
    if (attempt.late) return;
    let serverMs: unknown;
    if (Array.isArray(reply)) {
      // The server time the guard read (last value, or second after "late").
      serverMs = reply[0] === "late" ? reply[1] : reply.pop();
      if (typeof serverMs === "number") batch.node.observe(serverMs, localMs());
      // The guard's answer: the call reached Redis after its deadline and did nothing.
      if (reply[0] === "late") {
        // Refused on an assumed offset: the reply taught the true one, and the call did not run.
        if (assumed && !attempt.late && batch.node.known) return this.#run(batch, attempt);
        throw new StoreError(
          `Redis received the call too late to answer within timeoutMs (${this.#timeoutMs} ms); it did not run`,
          { timeout: true },
        );
      }
    }
    const error = this.#deliver(batch, reply, attempt.sentAt, serverMs);
    if (error !== undefined) throw error;
  }

  /** One call of the check program (FCALL, or EVALSHA: check-call.ts). */
  #call(batch: Batch, attempt: Attempt): Promise<unknown> {
    // The script must not start after the point where its reply could still reach us in time.
    const args = batch.args(batch.node.deadline(attempt.sentAt, this.#budgetMs), this.#grace);
    return this.#caller.call(batch.keys, args, () => attempt.late);
  }

  /** Decodes the reply and settles every check, or returns the error for a malformed reply (settling none). */
  #deliver(batch: Batch, text: unknown, sentAt: number, serverMs: unknown): StoreError | undefined {
    const pending = batch.pending;
    let expected = 0;
    for (const p of pending) expected += p.rule.width;
    const reply = replyFigures(text);
    if (reply === undefined || reply.length !== expected) {
      const got =
        reply !== undefined ? `an array of ${reply.length}` : Array.isArray(text) ? "no figures" : typeof text;
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
    batch.node.breaker.success();
    for (let i = 0; i < pending.length; i++) {
      const p = pending[i] as Pending;
      const d = decisions[i] as Decision | StoreError;
      p.done = true;
      if (d instanceof StoreError) {
        p.resolve(p.rule.fail(p.key, p.cost, p.now, p.op, d, p.at));
      } else {
        if (!d.allowed) p.rule.denied(p.key, p.cost, p.now, sentAt, d);
        // A lease's receipt: the server TIME reading every check of this call without a `now` was decided at.
        if (p.rule.leased && p.now === undefined && typeof serverMs === "number") stampAt(d, serverMs);
        p.resolve(d);
      }
    }
    return undefined;
  }
}

/**
 * Coalescing. Checks issued in the same event-loop turn are sent together: one script call
 * per Cluster slot (every check on standalone), at most `MAX_BATCH` checks each, so 64 checks
 * in flight cost a handful of round trips and script invocations instead of 64. The script
 * decides them in order, each atomically. A reply of NOSCRIPT means the script did not run, so
 * re-sending it with EVAL (which also caches it) cannot count anything twice; any other error
 * fails the batch without a retry. One timer bounds each batch by `timeoutMs`.
 */
import { StoreError } from "../../errors.ts";
import type { Breaker } from "./breaker.ts";
import type { RedisCommands } from "./client.ts";
import { splitBatch } from "./reply.ts";
import type { CheckScript } from "./script.ts";

/** Most checks decided by one script call (bounds how long one call holds Redis). */
const MAX_BATCH = 128;

interface Pending {
  keys: string[];
  args: string[];
  members: number;
  resolve: (fields: readonly string[]) => void;
  reject: (error: StoreError) => void;
}

/** Queues checks and sends them as batched script calls. */
export class Batcher {
  readonly #commands: RedisCommands;
  readonly #script: CheckScript;
  readonly #breaker: Breaker;
  readonly #timeoutMs: number;
  readonly #head: string[];
  #groups = new Map<number, Pending[]>();
  #scheduled = false;

  constructor(commands: RedisCommands, script: CheckScript, breaker: Breaker, timeoutMs: number, graceMs: number) {
    this.#commands = commands;
    this.#script = script;
    this.#breaker = breaker;
    this.#timeoutMs = timeoutMs;
    this.#head = [String(graceMs)];
  }

  /** Queues one check (its keys, its script arguments, its member count) for slot group `group`. */
  submit(group: number, keys: string[], args: string[], members: number): Promise<readonly string[]> {
    return new Promise((resolve, reject) => {
      let queue = this.#groups.get(group);
      if (queue === undefined) {
        queue = [];
        this.#groups.set(group, queue);
      }
      queue.push({ keys, args, members, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate (not a microtask) so checks issued by the continuations of one socket
        // read, several promise hops deep, all land in the same batch.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const groups = this.#groups;
    this.#groups = new Map();
    for (const queue of groups.values()) {
      for (let i = 0; i < queue.length; i += MAX_BATCH) this.#send(queue.slice(i, i + MAX_BATCH));
    }
  }

  #send(batch: Pending[]): void {
    const keys: string[] = [];
    const args: string[] = [...this.#head];
    for (const p of batch) {
      for (const k of p.keys) keys.push(k);
      for (const a of p.args) args.push(a);
    }
    let settled = false;
    const timer = setTimeout(() => {
      fail(new StoreError(`Redis did not answer within timeoutMs (${this.#timeoutMs} ms)`, { timeout: true }));
    }, this.#timeoutMs);
    const fail = (error: StoreError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.#breaker.failure();
      for (const p of batch) p.reject(error);
    };
    const { sha, source } = this.#script;
    this.#commands
      .evalsha(sha, keys, args)
      .catch((error: unknown) => {
        // NOSCRIPT: the script did not run (cache flushed, restart, failover), so EVAL is safe.
        if (error instanceof Error && error.message.startsWith("NOSCRIPT")) {
          return this.#commands.eval(source, keys, args);
        }
        throw error;
      })
      .then(
        (reply) => {
          if (settled) return;
          let results: ReturnType<typeof splitBatch>;
          try {
            results = splitBatch(
              reply,
              batch.map((p) => p.members),
            );
          } catch (error) {
            fail(error as StoreError);
            return;
          }
          settled = true;
          clearTimeout(timer);
          this.#breaker.success();
          batch.forEach((p, i) => {
            const result = results[i];
            if (result instanceof StoreError) p.reject(result);
            else p.resolve(result as readonly string[]);
          });
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
}

/**
 * `SharedMemoryStore`: one exact limit per key across `worker_threads`, decided synchronously in
 * the calling thread, straight on a SharedArrayBuffer (no messages, no event-loop turn).
 *
 * The store is the compact table of the capped store (src/stores/compact/: the same buckets,
 * fingerprints and probing as MemoryStore's compact tier) on shared memory, where each bucket is
 * replaced by compare-and-swap (compact/shared-table.ts), so it is safe under every interleaving
 * and every death; decide.ts makes one decision, room.ts makes room and pins resets, summary.ts
 * is the conservative summary behind the table, registry.ts the rules every thread shares.
 *
 * Memory is fixed at construction. A key that does not fit its bucket pushes out the bucket's
 * oldest entry (records that are already fresh are simply dropped); the pushed-out record is
 * joined into its rule's shared summary before the bucket is published without it, so no key
 * ever passes its limit; decisions read back from the summary carry `approximate: true`, as in
 * MemoryStore past `maxKeys`.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { blocksBeside } from "../../core/block.ts";
import type { Clock } from "../../core/clock.ts";
import { systemClock } from "../../core/clock.ts";
import { describeValue } from "../../core/describe-value.ts";
import { StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { fingerprint } from "../compact/fingerprint.ts";
import { FreeList } from "../compact/free-list.ts";
import { SharedTable } from "../compact/shared-table.ts";
import { bufferOf, sharedWord } from "../compact/shared-word.ts";
import { codecFor } from "./codec.ts";
import { blockWordTaken, checkOne, type DecideContext, decide } from "./decide.ts";
import { createMemory, H, type Layout, readLayout, viewsOf } from "./layout.ts";
import { paramsOf, type SharedMemoryStoreOptions } from "./params.ts";
import { hostFleetQueues, openThreadsFleetQueue, queueChannelName } from "./queue-channel.ts";
import { Registry } from "./registry.ts";
import { RuleViews } from "./rule-view.ts";
import { Summary } from "./summary.ts";

export type { SharedMemoryStoreOptions } from "./params.ts";

/** Longest a fleet queue call waits for the creating thread's answer, in ms. */
const QUEUE_TIMEOUT_MS = 5000;

/** The value to pass to other threads (`workerData`, `postMessage`): structured-cloneable. */
export interface SharedMemoryStoreHandle {
  /** What this is (checked by `attach`). */
  readonly kind: "sluice/threads";
  /** The whole store: a shared WebAssembly.Memory (its atomics run in WebAssembly). */
  readonly memory: WebAssembly.Memory;
  /** The memory's SharedArrayBuffer. */
  readonly buffer: SharedArrayBuffer;
  /** The BroadcastChannel name of the throttles' fleet queues, kept by the creating thread. */
  readonly queue?: string | undefined;
}

/** What `stats()` reports (the counters are shared by every thread). */
export interface SharedMemoryStoreStats {
  /** Keys held exactly now, across all rules and threads. */
  keys: number;
  /** The number of keys the table was sized for. */
  maxKeys: number;
  /** Records pushed out of the table into a summary. */
  evicted: number;
  /** Decisions read back from a summary (they carry `approximate: true`). */
  approximate: number;
  /** Of those, denials. */
  refused: number;
  /** Checks denied because neither the table nor the summary had room for the key (see docs/threads.md). */
  unplaced: number;
  /** Keys joined into their rule's overflow cell: the summary pool had no block for one of their cells (see docs/threads.md). */
  overflowed: number;
  /** Resets of summarised keys that found their bucket's pins all taken (their next decisions may be approximate). */
  unpinned: number;
  /** Rules registered. */
  rules: number;
  /** Bytes of the shared buffer (fixed). */
  bytes: number;
}

/**
 * A Store in shared memory, exact across the worker threads that attach to it.
 *
 * @example
 * const store = new SharedMemoryStore({ maxKeys: 100_000 });
 * new Worker(url, { workerData: store.handle }); // there: SharedMemoryStore.attach(workerData)
 */
export class SharedMemoryStore implements Store {
  /** Checks return plain decisions, never promises. */
  readonly synchronous = true;
  /** Decides `penalty`, `block` and `get` (rate-limiter-flexible's calls). */
  readonly flexibleCalls = true;
  /** The number of keys the table was sized for. */
  readonly maxKeys: number;
  /** What other threads pass to `attach`. */
  readonly handle: SharedMemoryStoreHandle;
  readonly #layout: Layout;
  readonly #registry: Registry;
  readonly #rules: RuleViews;
  readonly #ctx: DecideContext;
  /** The fleet queues' channel. */
  readonly #queueName: string | undefined;

  /** Creates a store (and its memory) in this thread. */
  constructor(options: SharedMemoryStoreOptions);
  /** @internal Used by `attach`. */
  constructor(
    options: SharedMemoryStoreOptions,
    attached: { memory: WebAssembly.Memory; layout: Layout; queue: string | undefined },
  );
  constructor(
    options: SharedMemoryStoreOptions,
    attached?: { memory: WebAssembly.Memory; layout: Layout; queue: string | undefined },
  ) {
    const { memory, layout } = attached ?? createMemory(paramsOf(options));
    // The memory's own buffer (a structured clone of the handle's may be another object over it).
    const buffer = bufferOf(memory);
    const views = viewsOf(buffer);
    this.#layout = layout;
    this.maxKeys = layout.maxKeys;
    const queue = attached === undefined ? queueChannelName() : attached.queue;
    this.handle = Object.freeze({ kind: "sluice/threads", memory, buffer, queue });
    this.#queueName = queue;
    this.#registry = new Registry(views, layout);
    this.#rules = new RuleViews(this.#registry, layout.recordWords);
    const summaryFree = new FreeList(views.W, views.I, layout.summaryFreeHead, layout.summaryNextBase);
    const rules = this.#rules;
    this.#ctx = {
      table: new SharedTable(views, layout.table, sharedWord(memory)),
      summary: new Summary(views, layout, summaryFree),
      view: (index) => rules.view(index),
      I: views.I,
      buckets: layout.buckets,
      h: new Uint32Array(3),
      noteBlock: (index, until) => this.#registry.noteBlock(index, until),
    };
    // The creating thread keeps the throttles' fleet queues (threads/queue-channel.ts); its
    // channel is unref'd and lives as long as the thread.
    if (attached === undefined && queue !== undefined) hostFleetQueues(queue, this);
  }

  /**
   * @internal Opens a throttle's fleet queue, kept by the thread that created the store (SPEC §16; see
   * threads/queue-channel.ts).
   */
  openFleetQueue(config: FleetQueueConfig): Promise<FleetQueue> {
    if (this.#queueName === undefined) {
      return Promise.reject(new StoreError("this SharedMemoryStore's handle names no fleet queue channel"));
    }
    return openThreadsFleetQueue(this.#queueName, config, QUEUE_TIMEOUT_MS, this);
  }

  /** The store another thread created, from its `handle`; StoreError if the value is not one. */
  static attach(handle: SharedMemoryStoreHandle): SharedMemoryStore {
    if (typeof handle !== "object" || handle === null || (handle as { kind?: unknown }).kind !== "sluice/threads") {
      throw new StoreError(
        `SharedMemoryStore.attach expects a SharedMemoryStore's \`handle\` (got ${describeValue(handle)})`,
      );
    }
    const layout = readLayout(handle.memory);
    const queue = typeof handle.queue === "string" ? handle.queue : undefined;
    return new SharedMemoryStore({ maxKeys: layout.maxKeys }, { memory: handle.memory, layout, queue });
  }

  /** Binds a rule: registers it (or finds it) in the shared registry and publishes its spec. */
  bind(binding: RuleBinding): BoundRule {
    const { rule } = binding;
    // Refused before anything is shared: a rule that does not fit never reaches other threads.
    const codec = codecFor(rule, this.#layout.recordWords);
    const index = this.#registry.indexOf(`${binding.id}\u0000${rule.shape}`);
    const clock: Clock | undefined = binding.clock;
    const blocked = this.#registry.blockUntil(index);
    if (codec.blockAt < 0 && blocksBeside(rule) && blocked > (clock ?? systemClock).now()) {
      throw blockWordTaken(rule, this.#layout.recordWords, blocked);
    }
    this.#registry.publish(
      index,
      JSON.stringify({ specs: rule.members.map((m) => m.spec), ban: rule.ban === undefined ? null : rule.ban }),
    );
    // Instants of this rule compare with another rule's only when both read the same clock (summary.ts reclaim).
    this.#ctx.summary.bound(index, clock ?? systemClock);
    const rules = this.#rules;
    const ctx = this.#ctx;
    const seed = this.#layout.seed;
    const registry = this.#registry;
    let view = rules.view(index);
    const run = (key: string, cost: number, now: number, op: Parameters<typeof decide>[5], at?: number) => {
      // The compiled rule is reused until another thread publishes a new spec for it.
      if (registry.peekVersion(index) !== view.version) view = rules.view(index);
      // Hashed on every decision: a memo by key text (a Map) was slower wherever it mattered. It
      // missed the caches past some 10k keys, and a key built per request (as servers build
      // them) has to be hashed by the Map anyway (docs/threads.md, "Speed").
      fingerprint(seed, key, ctx.h);
      return decide(ctx, view, index, cost, now, op, at);
    };
    return {
      check: (key, cost, now, op, at) =>
        run(key, cost, now === undefined ? systemClock.now() : now, op, at) as Decision,
      // The limiter's fast lane (`tryAcquire(key)` of one unit): `check(key, 1, now, "check")`
      // without the general path's layers (op dispatch, the `now` default), the same `decide`.
      checkOne: (key, now) => {
        if (registry.peekVersion(index) !== view.version) view = rules.view(index);
        fingerprint(seed, key, ctx.h);
        return checkOne(ctx, view, index, now);
      },
      reset: (key) => {
        run(key, 1, (clock ?? systemClock).now(), "reset");
      },
      // Rules stay registered (other threads may use them); their records go once fresh.
      release: () => {},
    };
  }

  /** Counters for logs and metrics, shared by every thread (`keys` is a walk of the table). */
  stats(): SharedMemoryStoreStats {
    const { W, I } = viewsOf(this.handle.buffer);
    const L = this.#layout;
    let rules = 0;
    for (let r = 0; r < L.maxRules; r++) if (Atomics.load(W, L.ruleIdBase + r) !== 0n) rules++;
    return {
      keys: this.#ctx.table.keys(),
      maxKeys: L.maxKeys,
      evicted: Atomics.load(I, H.evicted),
      approximate: Atomics.load(I, H.approximate),
      refused: Atomics.load(I, H.refused),
      unplaced: Atomics.load(I, H.unsummarised),
      unpinned: Atomics.load(I, H.unpinned),
      overflowed: Atomics.load(I, H.overflowed),
      rules,
      bytes: L.bytes,
    };
  }

  /** Returns this thread's private blocks to the shared pools (call when a thread is done with the store). */
  close(): void {
    this.#ctx.table.close();
    this.#ctx.summary.close();
  }
}

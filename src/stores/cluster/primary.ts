/**
 * The primary's side of `sluice/cluster`: one MemoryStore that decides every worker's checks.
 * It listens on `cluster`'s "message" event, which covers every current and future worker, and
 * answers each batch with one message. Decisions are made synchronously in arrival order, so
 * the limit holds exactly across workers. State outlives the workers (a restarted worker finds
 * its limits where they were); a reply that cannot be delivered (the worker died meanwhile) is
 * dropped, which changes nothing the primary already decided.
 */
import cluster, { type Worker } from "node:cluster";
import type { Decision } from "../../algorithms/decision.ts";
import { validateBan } from "../../ban.ts";
import type { Clock } from "../../clock.ts";
import { ArgumentError } from "../../errors.ts";
import { checkOptions } from "../../options.ts";
import { compileRule } from "../../rule.ts";
import { describeValue, validateSpec } from "../../spec.ts";
import type { BoundRule } from "../../store.ts";
import { MemoryStore, type MemoryStoreOptions } from "../memory/memory-store.ts";
import {
  type BatchMessage,
  type BindRecord,
  CHANNEL,
  encode,
  isMessage,
  type OpResult,
  type ReplyMessage,
} from "./protocol.ts";

/** Options of {@link startClusterStore}: those of the MemoryStore that holds the state. */
export type ClusterPrimaryOptions = MemoryStoreOptions;

/** The running primary side. */
export interface ClusterPrimary {
  /** The store deciding every worker's checks (for `stats()`). */
  readonly store: MemoryStore;
  /** Stops answering workers and releases their bindings (their checks then time out to `onError`). */
  stop(): void;
}

/** A rule definition bound in the primary, and how many worker bindings use it. */
interface Shared {
  readonly key: string;
  readonly bound: BoundRule;
  refs: number;
}

let running: ClusterPrimary | undefined;

/**
 * Starts the shared store in the `node:cluster` primary. Call it once, before or after forking.
 *
 * @example
 * if (cluster.isPrimary) { startClusterStore({ maxKeys: 1_000_000 }); for (let i = 0; i < 4; i++) cluster.fork(); }
 */
export function startClusterStore(options: ClusterPrimaryOptions = {}): ClusterPrimary {
  checkOptions(options, "startClusterStore", ["maxKeys", "sketchWidth"]);
  if (!cluster.isPrimary) {
    throw new ArgumentError("startClusterStore must run in the node:cluster primary (this process is a worker)");
  }
  if (running !== undefined) {
    throw new ArgumentError("startClusterStore is already running in this process (call stop() first)");
  }
  const store = new MemoryStore(options);
  /**
   * One primary binding per rule definition, shared by every worker that registers it. State
   * outlives the workers: a worker that exits (or crashes and is forked again) drops its
   * references but not the binding, so the limit goes on where it was; only explicit releases
   * (a limiter's `close()` in every worker) let the MemoryStore drop it.
   */
  const shared = new Map<string, Shared>();
  const workers = new Map<number, Map<number, Shared | string>>();
  /** One clock identity per rule id for injected time, so sweeps never compare it with the primary's. */
  const clocks = new Map<string, Clock>();

  const bind = (record: BindRecord): Shared | string => {
    try {
      if (typeof record.id !== "string" || !Array.isArray(record.specs) || record.specs.length === 0) {
        return `malformed rule registration (got ${describeValue(record)})`;
      }
      const key = JSON.stringify([record.id, record.specs, record.ban ?? null, record.clock === true]);
      const existing = shared.get(key);
      if (existing !== undefined) {
        existing.refs++;
        return existing;
      }
      const rule = compileRule(
        record.specs.map((spec) => validateSpec(spec)),
        validateBan(record.ban ?? undefined),
      );
      let clock: Clock | undefined;
      if (record.clock) {
        clock = clocks.get(record.id);
        if (clock === undefined) clocks.set(record.id, (clock = { now: () => Number.NaN }));
      }
      const entry: Shared = { key, bound: store.bind({ id: record.id, rule, clock }), refs: 1 };
      shared.set(key, entry);
      return entry;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };

  const onMessage = (worker: Worker, message: unknown) => {
    if (!isMessage<BatchMessage>(message, "batch")) return;
    let bindings = workers.get(worker.id);
    if (bindings === undefined) workers.set(worker.id, (bindings = new Map()));
    for (const record of message.binds ?? []) {
      const old = bindings.get(record.binding);
      if (typeof old === "object") drop(old, true);
      bindings.set(record.binding, bind(record));
    }
    for (const binding of message.releases ?? []) {
      const old = bindings.get(binding);
      if (typeof old === "object") drop(old, true);
      bindings.delete(binding);
    }
    const ops = message.ops ?? [];
    if (ops.length === 0) return;
    const results: OpResult[] = new Array(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const [binding, key, cost, now, op] = ops[i] as BatchMessage["ops"][number];
      const entry = bindings.get(binding);
      if (typeof entry !== "object") {
        results[i] =
          entry === undefined
            ? { error: `rule binding ${binding} is not registered`, unbound: true }
            : { error: entry };
        continue;
      }
      const bound = entry.bound;
      try {
        if (op === "reset") {
          void bound.reset(key); // the memory store resets synchronously
          results[i] = 0;
        } else if (op === "check" || op === "peek" || op === "refund") {
          results[i] = encode(bound.check(key, cost, now ?? undefined, op) as Decision);
        } else {
          results[i] = { error: `unknown operation ${describeValue(op)}` };
        }
      } catch (error) {
        results[i] = { error: error instanceof Error ? error.message : String(error) };
      }
    }
    const reply: ReplyMessage = { channel: CHANNEL, type: "reply", seq: message.seq, results };
    // A worker that died since it asked gets nothing; the callback swallows the send error.
    if (worker.isConnected()) worker.send(reply, () => {});
  };

  /** Drops one worker's reference; `release` (an explicit release) lets the last one free the state. */
  const drop = (entry: Shared, release: boolean) => {
    entry.refs--;
    if (release && entry.refs <= 0 && shared.get(entry.key) === entry) {
      shared.delete(entry.key);
      entry.bound.release();
    }
  };

  const onExit = (worker: Worker) => {
    const bindings = workers.get(worker.id);
    workers.delete(worker.id);
    if (bindings !== undefined) for (const b of bindings.values()) if (typeof b === "object") drop(b, false);
  };

  cluster.on("message", onMessage);
  cluster.on("exit", onExit);
  const primary: ClusterPrimary = {
    store,
    stop() {
      if (running !== primary) return;
      running = undefined;
      cluster.off("message", onMessage);
      cluster.off("exit", onExit);
      workers.clear();
      for (const entry of shared.values()) entry.bound.release();
      shared.clear();
    },
  };
  running = primary;
  return primary;
}

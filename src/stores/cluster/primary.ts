/**
 * The primary's side of `sluice/cluster`: one MemoryStore that decides every worker's checks.
 * It listens on `cluster`'s "message" event, which covers every current and future worker, and
 * answers each batch with one message. Decisions are made synchronously in arrival order, so
 * the limit holds exactly across workers. A worker that exits has its bindings released; a
 * reply that cannot be delivered (the worker died meanwhile) is dropped, which changes nothing
 * the primary already decided.
 */
import cluster, { type Worker } from "node:cluster";
import { algorithmFor } from "../../algorithms/index.ts";
import type { Clock } from "../../clock.ts";
import type { Decision } from "../../decision.ts";
import { ArgumentError } from "../../errors.ts";
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

const OPTION_KEYS = new Set(["maxKeys"]);

let running: ClusterPrimary | undefined;

/**
 * Starts the shared store in the `node:cluster` primary. Call it once, before or after forking.
 *
 * @example
 * if (cluster.isPrimary) { startClusterStore({ maxKeys: 1_000_000 }); for (let i = 0; i < 4; i++) cluster.fork(); }
 */
export function startClusterStore(options: ClusterPrimaryOptions = {}): ClusterPrimary {
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError(`startClusterStore options must be an object (got ${describeValue(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new ArgumentError(`unknown option \`${key}\` (expected maxKeys)`);
  }
  if (!cluster.isPrimary) {
    throw new ArgumentError("startClusterStore must run in the node:cluster primary (this process is a worker)");
  }
  if (running !== undefined) {
    throw new ArgumentError("startClusterStore is already running in this process (call stop() first)");
  }
  const store = new MemoryStore(options);
  const workers = new Map<number, Map<number, BoundRule | string>>();
  /** One clock identity per rule id for injected time, so sweeps never compare it with the primary's. */
  const clocks = new Map<string, Clock>();

  const bind = (record: BindRecord): BoundRule | string => {
    try {
      if (typeof record.id !== "string" || !Array.isArray(record.specs) || record.specs.length === 0) {
        return `malformed rule registration (got ${describeValue(record)})`;
      }
      const algorithms = record.specs.map((spec) => algorithmFor(validateSpec(spec)));
      let clock: Clock | undefined;
      if (record.clock) {
        clock = clocks.get(record.id);
        if (clock === undefined) clocks.set(record.id, (clock = { now: () => Number.NaN }));
      }
      return store.bind({ id: record.id, algorithms, clock });
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
      if (typeof old === "object") old.release();
      bindings.set(record.binding, bind(record));
    }
    for (const binding of message.releases ?? []) {
      const old = bindings.get(binding);
      if (typeof old === "object") old.release();
      bindings.delete(binding);
    }
    const ops = message.ops ?? [];
    if (ops.length === 0) return;
    const results: OpResult[] = new Array(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const [binding, key, cost, now, op] = ops[i] as BatchMessage["ops"][number];
      const bound = bindings.get(binding);
      if (typeof bound !== "object") {
        results[i] =
          bound === undefined
            ? { error: `rule binding ${binding} is not registered`, unbound: true }
            : { error: bound };
        continue;
      }
      try {
        if (op === "reset") {
          void bound.reset(key); // the memory store resets synchronously
          results[i] = 0;
        } else if (op === "check" || op === "peek") {
          results[i] = encode(bound.check(key, cost, now ?? undefined, op === "peek") as Decision);
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

  const onExit = (worker: Worker) => {
    const bindings = workers.get(worker.id);
    workers.delete(worker.id);
    if (bindings !== undefined) for (const b of bindings.values()) if (typeof b === "object") b.release();
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
      for (const id of [...workers.keys()]) onExit({ id } as Worker);
    },
  };
  running = primary;
  return primary;
}

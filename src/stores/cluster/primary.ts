/**
 * The primary's side of `sluice/cluster` over IPC: one MemoryStore (behind the dispatcher shared
 * with the socket host) that decides every worker's checks. It listens on `cluster`'s "message" event, which covers every current and future worker, and
 * answers each batch with one message. Decisions are made synchronously in arrival order, so
 * the limit holds exactly across workers. State outlives the workers (a restarted worker finds
 * its limits where they were); a reply that cannot be delivered (the worker died meanwhile) is
 * dropped, which changes nothing the primary already decided.
 */
import cluster, { type Worker } from "node:cluster";
import { ArgumentError } from "../../core/errors.ts";
import { checkOptions } from "../../core/options.ts";
import { isQueueMessage, type QueueCall, QueueHost } from "../fleet-queue-host.ts";
import { MEMORY_STORE_OPTIONS, MemoryStore, type MemoryStoreOptions } from "../memory/memory-store.ts";
import { createDispatcher } from "./dispatcher.ts";
import { type BatchMessage, isMessage } from "./protocol.ts";

/** Options of {@link startClusterStore}: those of the MemoryStore that holds the state. */
export type ClusterPrimaryOptions = MemoryStoreOptions;

/** The running primary side. */
export interface ClusterPrimary {
  /** The store deciding every worker's checks (for `stats()`). */
  readonly store: MemoryStore;
  /** Stops answering workers and releases their bindings (their checks then time out to `onError`). */
  stop(): void;
}

let running: ClusterPrimary | undefined;

/**
 * Starts the shared store in the `node:cluster` primary. Call it once, before or after forking.
 *
 * @example
 * if (cluster.isPrimary) { startClusterStore({ maxKeys: 1_000_000 }); for (let i = 0; i < 4; i++) cluster.fork(); }
 */
export function startClusterStore(options: ClusterPrimaryOptions = {}): ClusterPrimary {
  checkOptions(options, "startClusterStore", MEMORY_STORE_OPTIONS);
  if (!cluster.isPrimary) {
    throw new ArgumentError("startClusterStore must run in the node:cluster primary (this process is a worker)");
  }
  if (running !== undefined) {
    throw new ArgumentError("startClusterStore is already running in this process (call stop() first)");
  }
  const store = new MemoryStore(options);
  const dispatcher = createDispatcher(store);
  // Throttles' fleet queues (queue-host.ts): grants for a worker outside its own call are pushed.
  const queues = new QueueHost(store, (id, message) => {
    const worker = cluster.workers?.[id];
    if (worker?.isConnected()) worker.send(message, () => {});
  });
  const onMessage = (worker: Worker, message: unknown) => {
    if (isQueueMessage<QueueCall>(message, "queue")) {
      const reply = queues.handle(worker.id, message);
      if (worker.isConnected()) worker.send(reply, () => {});
      return;
    }
    if (!isMessage<BatchMessage>(message, "batch")) return;
    const reply = dispatcher.handle(worker.id, message);
    // A worker that died since it asked gets nothing; the callback swallows the send error.
    if (reply !== undefined && worker.isConnected()) worker.send(reply, () => {});
  };
  const onExit = (worker: Worker) => {
    dispatcher.disconnect(worker.id);
    queues.disconnect(worker.id);
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
      dispatcher.stop();
      queues.stop();
    },
  };
  running = primary;
  return primary;
}

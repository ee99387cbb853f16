/**
 * Shared by the worker-thread suites: real `worker_threads` running test/threads/worker.mjs on
 * the built package (built first when src/ is newer than dist/), attached to one store.
 */
import { Worker } from "node:worker_threads";
import type { SharedMemoryStoreHandle } from "sluice/threads";
import { ensureBuilt } from "../cli/helpers.ts";

export { ensureBuilt };

/** A limiter each worker builds: same name and spec in every thread (that is what shares it). */
export interface RuleDef {
  name: string;
  spec: unknown;
  ban?: { after: number; withinMs: number; forMs: number };
}

/** What a worker is asked to do (see worker.mjs). */
export interface Task {
  kind: "flood" | "trace" | "chaos" | "evict" | "rounds" | "cliff";
  rules: RuleDef[];
  control: SharedArrayBuffer;
  now?: number;
  [more: string]: unknown;
}

/** Atomics.waitAsync (Node ≥ 16; TypeScript types it from lib es2024 only). */
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;
type WaitAsync = (
  array: Int32Array,
  index: number,
  value: number,
  timeout: number,
) => { async: boolean; value: Promise<string> | string };

const WORKER = new URL("./worker.mjs", import.meta.url);

/** Starts a worker on `task`; `result` settles with its one message (or its error / early exit). */
export function spawnWorker<T>(handle: SharedMemoryStoreHandle, task: Task): { worker: Worker; result: Promise<T> } {
  const worker = new Worker(WORKER, { workerData: { handle, task } });
  const result = new Promise<T>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`worker exited with ${code} before answering`)));
  });
  return { worker, result };
}

/** Resolves when `control[at]` reaches at least `value` (polled: the main thread must not block its loop). */
export async function reached(control: Int32Array, at: number, value: number): Promise<void> {
  while (Atomics.load(control, at) < value) {
    const seen = Atomics.load(control, at);
    const { async, value: wait } = waitAsync(control, at, seen, 200);
    if (async) await wait;
  }
}

/**
 * Waits until every one of `workers` is attached and waiting on `control` (slot 1 counts them),
 * starts them all at once (slot 0), and resolves with their answers in order.
 */
export async function startTogether<T>(control: Int32Array, workers: { result: Promise<T> }[]): Promise<T[]> {
  await reached(control, 1, workers.length);
  Atomics.store(control, 0, 1);
  Atomics.notify(control, 0);
  return Promise.all(workers.map((w) => w.result));
}

/**
 * `sluice/threads`: one exact limit per key across `worker_threads`, in shared memory.
 * `new SharedMemoryStore({ maxKeys })` where the memory is owned, `store.handle` to other
 * threads (`workerData` or `postMessage`), `SharedMemoryStore.attach(handle)` there.
 */
export {
  SharedMemoryStore,
  type SharedMemoryStoreHandle,
  type SharedMemoryStoreOptions,
  type SharedMemoryStoreStats,
} from "./shared-memory-store.ts";

/**
 * `sluice/cluster`: one exact store shared by the `node:cluster` workers of a machine, without
 * Redis. `startClusterStore()` in the primary, `new ClusterStore()` in each worker.
 */
export type { BreakerOptions } from "../redis/breaker.ts";
export type { OnError } from "../redis/failure.ts";
export { ClusterStore, type ClusterStoreOptions } from "./cluster-store.ts";
export { type ClusterPrimary, type ClusterPrimaryOptions, startClusterStore } from "./primary.ts";

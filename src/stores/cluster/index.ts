/**
 * `sluice/cluster`: one exact store shared by the processes of a machine, without Redis:
 * `startClusterStore()` in the node:cluster primary and `new ClusterStore()` in each worker, or
 * `new ClusterStore({ socket })` in every process (PM2 cluster mode), one of which then hosts.
 */
export type { BreakerOptions } from "../remote/breaker.ts";
export type { FallbackLimiter, FallbackOption, FixedPolicy, OnError } from "../remote/failure-policy.ts";
export { ClusterStore, type ClusterStoreOptions } from "./cluster-store.ts";
export { type ClusterPrimary, type ClusterPrimaryOptions, startClusterStore } from "./primary.ts";

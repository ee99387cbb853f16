/**
 * `sluice/redis`: the distributed store. Pass an ioredis or node-redis client; every check is
 * one atomic Lua decision in Redis/Valkey (standalone or Cluster).
 */

export { STORE_FAILURE_WARNING } from "../failure-warning.ts";
export type { BreakerOptions } from "./breaker.ts";
export type { IoredisLike, NodeRedisLike, RedisClientLike } from "./client.ts";
export type { RedisConnectOptions } from "./connect.ts";
export type { DenyCacheOptions } from "./deny-cache.ts";
export type { FallbackOption, OnError } from "./failure.ts";
export { RedisStore, type RedisStoreOptions } from "./redis-store.ts";
export type { UpstashLike, UpstashRequester } from "./upstash-commands.ts";

/**
 * `sluice/redis`: the distributed store. Pass an ioredis or node-redis client; every check is
 * one atomic Lua decision in Redis/Valkey (standalone or Cluster).
 */

export type { BreakerOptions } from "../remote/breaker.ts";
export type { FallbackLimiter, FallbackOption, FixedPolicy, OnError } from "../remote/failure-policy.ts";
export { STORE_FAILURE_WARNING } from "../remote/failure-warning.ts";
export type { IoredisLike, NodeRedisLike, RedisClientLike } from "./client.ts";
export type { RedisConnectOptions } from "./connect.ts";
export type { DenyCacheOptions } from "./deny-cache.ts";
export type { GlideLike } from "./glide-commands.ts";
export { RedisStore, type RedisStoreOptions } from "./redis-store.ts";
export type { UpstashLike, UpstashRequester } from "./upstash-commands.ts";

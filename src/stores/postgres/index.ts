/**
 * `sluice/postgres`: `PostgresStore`, exact rate limits shared through a PostgreSQL table, on a
 * `pg` Pool you give it (`pg` is an optional peer: this entry never loads it). Built only on the
 * public store kit, `sluice/store`.
 */
export type { FallbackLimiter, FallbackOption, FixedPolicy, OnError } from "../author/index.ts";
export { STORE_FAILURE_WARNING } from "../author/index.ts";
export type { PoolClientLike, PoolLike, QueryResultLike, Statement } from "./pool.ts";
export { PostgresStore, type PostgresStoreOptions } from "./postgres-store.ts";

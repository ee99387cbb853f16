/**
 * The pieces sluice's own remote stores (Redis, the cluster store, the service client) answer
 * failures with, published in `sluice/store` so a third-party store over a network (PostgreSQL,
 * DynamoDB, etcd) fails the same way without copying them: the same `onError` policies and
 * their validation, the same once-only `SLUICE_STORE_FAILURE` warning, the same timeout race,
 * the same typed errors and option checks. They were missing from the kit until PostgresStore
 * (sluice/postgres), written only against `sluice/store`, needed them.
 */
export { type Clock, systemClock } from "../../core/clock.ts";
export { ArgumentError, StoreError } from "../../core/errors.ts";
export { checkOptions } from "../../core/options.ts";
export { Coalescer, type Coalescible, nextTurn } from "../remote/coalescer.ts";
export {
  checkOnError,
  DEFAULT_POLICY,
  type DecideFailed,
  describePolicy,
  type FailurePolicy,
  type FallbackLimiter,
  type FallbackOption,
  type FixedPolicy,
  type OnError,
  rulePolicy,
} from "../remote/failure-policy.ts";
export { firstFailureWarning, STORE_FAILURE_WARNING } from "../remote/failure-warning.ts";
export { checkTimeoutMs, DEFAULT_TIMEOUT_MS, timeoutError, withTimeout } from "../remote/with-timeout.ts";

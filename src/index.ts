/**
 * sluice: exact, fast, bounded rate limiting. One interface (`tryAcquire(key)` → Decision),
 * six algorithms, an in-process store (here) and a Redis store (`sluice/redis`).
 */
export type { AcquireOptions } from "./acquire.ts";
export type { Algorithm } from "./algorithms/algorithm.ts";
export type { Decision, DecisionFailure } from "./algorithms/decision.ts";
export { algorithmFor } from "./algorithms/index.ts";
export type { BanPolicy } from "./core/ban.ts";
export { type Clock, type CoarseClockOptions, coarseClock, ManualClock, systemClock } from "./core/clock.ts";
export { combine } from "./core/composite.ts";
export type { Operation } from "./core/decide-rule.ts";
export {
  ArgumentError,
  ConfigError,
  DuplicateRuleError,
  isSluiceError,
  LeaseLostError,
  QueueFullError,
  SluiceError,
  StoreError,
  ThrottleClosedError,
  UnknownRuleError,
  WaitTimeoutError,
} from "./core/errors.ts";
export type { RuleIdentity } from "./core/identity.ts";
export type { CompiledRule } from "./core/rule.ts";
export { shareOf } from "./core/share.ts";
export {
  ALGORITHMS,
  type AlgorithmName,
  type AlgorithmSpec,
  type ConcurrencySpec,
  type FixedWindowSpec,
  type GcraSpec,
  type LeakyBucketSpec,
  type LimitSpec,
  type RateAlgorithmName,
  type RuleSpec,
  type ShorthandSpec,
  type SlidingLogSpec,
  type SlidingWindowSpec,
  SPEC_ALGORITHMS,
  specLimit,
  type TokenBucketSpec,
  validateRule,
  validateSpec,
  type WindowAnchor,
} from "./core/spec.ts";
export type { BoundRule, RuleBinding, Store } from "./core/store.ts";
export {
  createLimiter,
  type DecisionEvent,
  type LeaseReceipt,
  type Limiter,
  type LimiterOptions,
  type RefundReceipt,
  type ResetResult,
  type Result,
} from "./limiter.ts";
export { classify, type ReplayEvent, replay } from "./replay.ts";
export {
  type CheckOptions,
  type GetResult,
  type GroupCheck,
  RateLimiterService,
  type RuleInfo,
  type RuleOptions,
} from "./service.ts";
export {
  MemoryStore,
  type MemoryStoreOptions,
  type MemoryStoreStats,
  type RuleKeys,
} from "./stores/memory/memory-store.ts";
export type { RestoredTable, RestoreReport } from "./stores/memory/restore-report.ts";
export type { AdaptiveOptions } from "./throttle/adaptive-rate.ts";
export { createThrottle, type Throttle } from "./throttle/create-throttle.ts";
export type { JobOutcome, OutcomeStatus, ThrottleEvents } from "./throttle/events.ts";
export type { Task, TaskContext } from "./throttle/job.ts";
export type { ThrottleStats } from "./throttle/ledger.ts";
export type { ScheduleOptions, ThrottleOptions } from "./throttle/options.ts";
export type {
  HeadersGetter,
  HeadersLike,
  ResponseLike,
  UpstreamHint,
  UpstreamPolicy,
} from "./throttle/upstream-headers.ts";

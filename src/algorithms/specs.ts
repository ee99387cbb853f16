/**
 * The spec types: plain objects naming an algorithm and its parameters. They live beside the
 * algorithms (the innermost layer); validation of user input is in `src/core/spec.ts`.
 */
/**
 * `limit` requests per `windowMs`, windows aligned to multiples of `windowMs` since epoch 0, or
 * with `anchor: "first"` each key's window starting at its first counted request.
 */
export interface FixedWindowSpec {
  algorithm: "fixed-window";
  limit: number;
  windowMs: number;
  /** Where windows start: `"clock"` (default) aligned to epoch 0; `"first"` at a key's first counted request. */
  anchor?: WindowAnchor;
}
/** Where a fixed window starts: aligned to the clock, or at a key's first counted request. */
export type WindowAnchor = "clock" | "first";
/** At most `limit` in any rolling `windowMs`; exact, O(limit) memory per key. */
export interface SlidingLogSpec {
  algorithm: "sliding-log";
  limit: number;
  windowMs: number;
}
/** Rolling-window estimate from two fixed-window counters; O(1) memory per key. */
export interface SlidingWindowSpec {
  algorithm: "sliding-window";
  limit: number;
  windowMs: number;
}
/** Bursts up to `capacity`, refilled at `refillPerSecond` tokens per second; starts full. */
export interface TokenBucketSpec {
  algorithm: "token-bucket";
  capacity: number;
  refillPerSecond: number;
}
/** `limit` per `periodMs` as evenly spaced emissions, `burst` (default `limit`) at once; one number per key. */
export interface GcraSpec {
  algorithm: "gcra";
  limit: number;
  periodMs: number;
  burst?: number;
}
/** A queue of `capacity` draining at `leakPerSecond`; admitted requests carry `delayMs`. */
export interface LeakyBucketSpec {
  algorithm: "leaky-bucket";
  capacity: number;
  leakPerSecond: number;
}
/**
 * At most `limit` requests in flight per key: each allowed request holds a lease (a log entry)
 * until it is released, or until `leaseMs` (default 60 s) after it was acquired or last renewed,
 * so a crashed holder's slots free themselves.
 */
export interface ConcurrencySpec {
  algorithm: "concurrency";
  limit: number;
  leaseMs?: number;
}
/** The seed's spec form: `fixed` = fixed-window, `sliding` = sliding-log, `bucket` = token-bucket. */
export type ShorthandSpec =
  | { type: "fixed" | "sliding"; limit: number; windowMs: number }
  | { type: "bucket"; capacity: number; refillPerSecond: number };

/** Any normalised spec (what `validateSpec` returns). */
export type AlgorithmSpec =
  | FixedWindowSpec
  | SlidingLogSpec
  | SlidingWindowSpec
  | TokenBucketSpec
  | GcraSpec
  | LeakyBucketSpec
  | ConcurrencySpec;

/** A spec as users may write it: one of the seven algorithms or the seed's aliases. */
export type LimitSpec = AlgorithmSpec | ShorthandSpec;

/** A rule: one spec, or an array of specs that must all pass (a composite). */
export type RuleSpec = LimitSpec | readonly LimitSpec[];

/** The rate algorithms' names, in the order the docs present them (the concurrency spec is not a rate). */
export const ALGORITHMS = [
  "fixed-window",
  "sliding-log",
  "sliding-window",
  "token-bucket",
  "gcra",
  "leaky-bucket",
] as const;

/** One of the six rate algorithm names. */
export type RateAlgorithmName = (typeof ALGORITHMS)[number];

/** Every `algorithm` a spec may name: the six rates and `"concurrency"` (requests in flight). */
export const SPEC_ALGORITHMS = [...ALGORITHMS, "concurrency"] as const;

/** Any `algorithm` a spec may name. */
export type AlgorithmName = (typeof SPEC_ALGORITHMS)[number];

/** The lease length of a concurrency spec that names none: 60 s. */
export const DEFAULT_LEASE_MS = 60_000;

/**
 * The clock-translation property (docs/semantics.md §5): a trace decides identically at clock 0
 * and shifted by a large multiple of every window (today's epoch), for every algorithm, at
 * rates from 1/h to 1e9/min. Shared by the MemoryStore suite (test/properties) and the Redis
 * suite (test/redis), which run the same seeded traces.
 */
import fc from "fast-check";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, type Store } from "sluice";

/** Today's epoch in ms (a float64 ulp here is ~2.4e-4 ms). */
export const EPOCH = 1_800_000_000_000;

/** A log-uniform integer in [1, max]. */
const logInt = (max: number) =>
  fc.double({ min: 0, max: Math.log10(max), noNaN: true }).map((x) => Math.round(10 ** x));

/** A rate as `limit` per `periodMs`, from 1 per hour to 1e9 per minute. */
const rateArb = fc
  .record({
    periodMs: fc.oneof(fc.constantFrom(1, 1000, 60_000, 3_600_000), fc.integer({ min: 1, max: 3_600_000 })),
    limit: logInt(1e9),
  })
  .map(({ periodMs, limit }) => ({
    periodMs,
    limit: Math.max(1, Math.min(limit, Math.floor((1e9 * periodMs) / 60_000))),
  }));

/** A spec of `algorithm` at a rate from 1/h to 1e9/min, its burst a log-uniform part of its limit. */
export function wideSpecArb(algorithm: AlgorithmSpec["algorithm"]): fc.Arbitrary<AlgorithmSpec> {
  return fc.record({ rate: rateArb, part: fc.double({ min: 0, max: 1, noNaN: true }) }).map(({ rate, part }) => {
    const { limit, periodMs } = rate;
    const burst = Math.max(1, Math.round(limit ** part));
    const perSecond = (limit * 1000) / periodMs;
    switch (algorithm) {
      case "fixed-window":
        return { algorithm, limit, windowMs: periodMs };
      case "sliding-log":
        // O(limit) memory per key: the log's behaviour does not depend on its size.
        return { algorithm, limit: Math.min(limit, 300), windowMs: periodMs };
      case "sliding-window":
        return { algorithm, limit: Math.min(limit, Math.floor(2 ** 51 / periodMs)), windowMs: periodMs };
      case "token-bucket":
        return { algorithm, capacity: burst, refillPerSecond: perSecond };
      case "gcra":
        return { algorithm, limit, periodMs, burst };
      default:
        return { algorithm: "leaky-bucket", capacity: burst, leakPerSecond: perSecond };
    }
  });
}

/** One event: wait `gap` ms, then a check, peek or refund of `cost` units of `key`. */
export interface TranslationEvent {
  gap: number;
  key: string;
  cost: number;
  op: "tryAcquire" | "peek" | "refund";
}

/**
 * Events for a rule reporting `limit` over `periodMs`: mostly several at one instant (a high
 * rate fills its burst within a ms) or 1 ms apart, now and then a fraction of the period or a
 * long idle gap; costs from 1 to past the limit.
 */
export function eventsArb(limit: number, periodMs: number): fc.Arbitrary<TranslationEvent[]> {
  const gap = fc.oneof(
    { weight: 5, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: Math.max(1, Math.ceil(periodMs / 4)) }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 * periodMs }) },
  );
  const cost = fc.oneof(
    { weight: 3, arbitrary: fc.constant(1) },
    { weight: 3, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((p) => Math.max(1, Math.round(limit * p))) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: limit + 2 }) },
  );
  const op = fc.constantFrom("tryAcquire", "tryAcquire", "tryAcquire", "tryAcquire", "peek", "refund") as fc.Arbitrary<
    TranslationEvent["op"]
  >;
  return fc.array(fc.record({ gap, key: fc.constantFrom("a", "b"), cost, op }), { minLength: 1, maxLength: 60 });
}

/** The window a spec's decisions are aligned to (1 for those aligned to nothing). */
export function windowOf(spec: AlgorithmSpec): number {
  return "windowMs" in spec ? spec.windowMs : 1;
}

/** The largest multiple of the spec's window at or below {@link EPOCH}. */
export function shiftFor(spec: AlgorithmSpec): number {
  const w = windowOf(spec);
  return Math.floor(EPOCH / w) * w;
}

/** Runs `events` from clock `t0` through a limiter of `spec` on `store`; returns every decision. */
export async function runEvents(
  spec: AlgorithmSpec,
  store: Store,
  t0: number,
  events: TranslationEvent[],
): Promise<Decision[]> {
  const clock = new ManualClock(t0);
  const limiter = createLimiter(spec, { clock, store, name: "translation" });
  const out: Decision[] = [];
  try {
    for (const e of events) {
      clock.advance(e.gap);
      out.push(await limiter[e.op](e.key, e.cost));
    }
  } finally {
    limiter.close();
  }
  return out;
}

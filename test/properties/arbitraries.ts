/** fast-check arbitraries shared by the property suites: specs of each algorithm and traces. */
import fc from "fast-check";
import type { AlgorithmSpec } from "sluice";

/** Emission intervals that divide 1000, so gcra's T and the token bucket's rate are both whole. */
export const WHOLE_T = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000];

/**
 * A spec of every algorithm. `exact` keeps every quotient whole (integer rates, periodMs a
 * multiple of limit), where docs/semantics.md §5 makes figures exact; otherwise quotients may be inexact.
 */
export function specArb(exact: boolean): fc.Arbitrary<AlgorithmSpec> {
  const limit = fc.integer({ min: 1, max: 8 });
  const windowMs = fc.integer({ min: 1, max: 2000 });
  const rate = exact
    ? fc.integer({ min: 1, max: 50 })
    : fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.001, max: 50, noNaN: true }));
  const gcra = exact
    ? fc
        .record({ limit, t: fc.constantFrom(...WHOLE_T), burst: fc.option(limit, { nil: undefined }) })
        .map(({ limit, t, burst }) => ({
          algorithm: "gcra" as const,
          limit,
          periodMs: limit * t,
          burst: burst ?? limit,
        }))
    : fc
        .record({ limit, periodMs: fc.integer({ min: 1, max: 5000 }), burst: fc.option(limit, { nil: undefined }) })
        .map(({ limit, periodMs, burst }) => ({ algorithm: "gcra" as const, limit, periodMs, burst: burst ?? limit }));
  const leaky = exact
    ? fc
        .record({ capacity: limit, t: fc.constantFrom(...WHOLE_T) })
        .map(({ capacity, t }) => ({ algorithm: "leaky-bucket" as const, capacity, leakPerSecond: 1000 / t }))
    : fc.record({ capacity: limit, leakPerSecond: rate }).map((r) => ({ algorithm: "leaky-bucket" as const, ...r }));
  return fc.oneof(
    fc.record({ limit, windowMs }).map((r) => ({ algorithm: "fixed-window" as const, ...r })),
    fc.record({ limit, windowMs }).map((r) => ({ algorithm: "sliding-log" as const, ...r })),
    fc.record({ limit, windowMs }).map((r) => ({ algorithm: "sliding-window" as const, ...r })),
    fc.record({ capacity: limit, refillPerSecond: rate }).map((r) => ({ algorithm: "token-bucket" as const, ...r })),
    gcra,
    leaky,
  );
}

/** One request of a trace: wait `gap` ms, then ask for `cost` units for `key`. */
export interface Step {
  gap: number;
  key: string;
  cost: number;
}

/** Traces with time moving forward, mostly short gaps and now and then a long idle one. */
export function traceArb(opts: { keys?: number; maxCost?: number; maxLength?: number } = {}): fc.Arbitrary<Step[]> {
  const { keys = 1, maxCost = 3, maxLength = 60 } = opts;
  const gap = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 50 }) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 1500 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 20_000 }) },
  );
  const key = fc.integer({ min: 0, max: keys - 1 }).map((k) => `k${k}`);
  return fc.array(fc.record({ gap, key, cost: fc.integer({ min: 1, max: maxCost }) }), {
    minLength: 1,
    maxLength,
  });
}

/** Start instants: zero, small, and epoch milliseconds (where float rounding is coarser). */
export const startArb = fc.constantFrom(0, 7, 123_456, 1_760_000_000_000);

/** The same specs with `limit` (or capacity, or burst) set to `limit`: same shape where the algorithm allows. */
export function withLimit(specs: AlgorithmSpec[], limit: number): AlgorithmSpec[] {
  return specs.map((s) => {
    switch (s.algorithm) {
      case "gcra":
        return { ...s, limit, periodMs: (s.periodMs / s.limit) * limit, burst: limit };
      case "token-bucket":
      case "leaky-bucket":
        return s; // capacity is part of their shape: a change would start fresh on both stores alike
      default:
        return { ...s, limit };
    }
  });
}

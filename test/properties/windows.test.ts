// Window invariants (issue 2, "How it is checked"): what each algorithm may admit in a span.
import fc from "fast-check";
import { createLimiter, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { runs } from "../support/seed.ts";
import { startArb, traceArb } from "./arbitraries.ts";

/** Runs a single-key trace; returns the admitted requests as [time, cost]. */
function admitted(spec: Parameters<typeof createLimiter>[0], start: number, trace: ReturnType<typeof sample>) {
  const clock = new ManualClock(start);
  const limiter = createLimiter(spec, clock);
  const out: Array<[number, number]> = [];
  for (const { gap, cost } of trace) {
    clock.advance(gap);
    if (limiter.tryAcquire("k", cost).allowed) out.push([clock.now(), cost]);
  }
  return out;
}
type Trace = { gap: number; key: string; cost: number }[];
const sample = (t: Trace) => t;

/** Units admitted at times in [from, to] (inclusive both ends). */
const unitsIn = (log: Array<[number, number]>, from: number, to: number) =>
  log.reduce((n, [t, c]) => (t >= from && t <= to ? n + c : n), 0);

const limit = fc.integer({ min: 1, max: 6 });
const windowMs = fc.integer({ min: 1, max: 1500 });

describe("window invariants", () => {
  it("sliding-log: at most limit units in any window (t − W, t]", () => {
    fc.assert(
      fc.property(limit, windowMs, startArb, traceArb({ maxCost: 4, maxLength: 80 }), (L, W, start, trace) => {
        const log = admitted({ algorithm: "sliding-log", limit: L, windowMs: W }, start, trace);
        for (const [t] of log) expect(unitsIn(log, t - W + 1, t)).toBeLessThanOrEqual(L);
      }),
      { numRuns: runs(300) },
    );
  });

  it("sliding-log: a request is refused only when the window (now − W, now] is too full for it", () => {
    fc.assert(
      fc.property(limit, windowMs, traceArb({ maxCost: 4, maxLength: 60 }), (L, W, trace) => {
        const clock = new ManualClock(0);
        const limiter = createLimiter({ algorithm: "sliding-log", limit: L, windowMs: W }, clock);
        const log: Array<[number, number]> = [];
        for (const { gap, cost } of trace) {
          clock.advance(gap);
          const now = clock.now();
          const allowed = limiter.tryAcquire("k", cost).allowed;
          expect(allowed).toBe(unitsIn(log, now - W + 1, now) + cost <= L);
          if (allowed) log.push([now, cost]);
        }
      }),
      { numRuns: runs(300) },
    );
  });

  it("fixed-window: at most 2·limit units in any span of windowMs", () => {
    fc.assert(
      fc.property(limit, windowMs, startArb, traceArb({ maxCost: 4, maxLength: 80 }), (L, W, start, trace) => {
        const log = admitted({ algorithm: "fixed-window", limit: L, windowMs: W }, start, trace);
        for (const [t] of log) expect(unitsIn(log, t, t + W - 1)).toBeLessThanOrEqual(2 * L);
      }),
      { numRuns: runs(300) },
    );
  });

  it("sliding-window: at most 2·limit units in any span of windowMs, at most limit in one aligned window", () => {
    fc.assert(
      fc.property(limit, windowMs, startArb, traceArb({ maxCost: 4, maxLength: 80 }), (L, W, start, trace) => {
        const log = admitted({ algorithm: "sliding-window", limit: L, windowMs: W }, start, trace);
        for (const [t] of log) {
          expect(unitsIn(log, t, t + W - 1)).toBeLessThanOrEqual(2 * L);
          const s = Math.floor(t / W) * W;
          expect(unitsIn(log, s, s + W - 1)).toBeLessThanOrEqual(L);
        }
      }),
      { numRuns: runs(300) },
    );
  });

  it("token-bucket: at most capacity + rate·t units over any span t", () => {
    fc.assert(
      fc.property(
        limit,
        fc.oneof(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0.01, max: 40, noNaN: true })),
        startArb,
        traceArb({ maxCost: 4, maxLength: 80 }),
        (C, rate, start, trace) => {
          const log = admitted({ algorithm: "token-bucket", capacity: C, refillPerSecond: rate }, start, trace);
          for (let i = 0; i < log.length; i++) {
            let units = 0;
            for (let j = i; j < log.length; j++) {
              units += (log[j] as [number, number])[1];
              const span = (log[j] as [number, number])[0] - (log[i] as [number, number])[0];
              // 1 ms of refill of slack: the bound of docs/semantics.md §5 for inexact (fractional) rates.
              expect(units).toBeLessThanOrEqual(C + (rate * (span + 1)) / 1000 + 1e-9);
              if (Number.isInteger(rate)) expect(units * 1000).toBeLessThanOrEqual(C * 1000 + rate * span);
            }
          }
        },
      ),
      { numRuns: runs(300) },
    );
  });
});

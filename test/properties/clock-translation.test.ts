// docs/semantics.md §5: no decision depends on the clock's absolute value. Every trace decides
// identically at clock 0 and shifted to today's epoch (by a multiple of every window), for all
// six algorithms at rates from 1/h to 1e9/min; and GCRA / leaky-bucket offered twice their
// rate admit exactly `rate·t + burst`, at the epoch too.
import fc from "fast-check";
import { ALGORITHMS, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { EPOCH, eventsArb, runEvents, shiftFor, wideSpecArb } from "../support/clock-translation.ts";

const SEED = 190_019;

describe("clock translation, MemoryStore", () => {
  for (const [i, algorithm] of ALGORITHMS.entries()) {
    it(`${algorithm}: a trace decides identically at 0 and at today's epoch`, async () => {
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(
          wideSpecArb(algorithm).chain((spec) => {
            const limit = "limit" in spec ? spec.limit : spec.capacity;
            const period = "windowMs" in spec ? spec.windowMs : "periodMs" in spec ? spec.periodMs : 1000;
            return fc.tuple(fc.constant(spec), eventsArb(limit, period));
          }),
          async ([spec, events]) => {
            const base = await runEvents(spec, new MemoryStore(), 0, events);
            const shifted = await runEvents(spec, new MemoryStore(), shiftFor(spec), events);
            expect(shifted, JSON.stringify(spec)).toEqual(base);
            runs++;
          },
        ),
        { seed: SEED + i, numRuns: 150 },
      );
      expect(runs).toBeGreaterThanOrEqual(150);
    });
  }
});

/**
 * Offers twice `perMs` units per ms (in requests of `cost` units, at every whole ms from `t0` to
 * `t0 + ms`), a burst's worth ahead so demand never runs out, and returns the units admitted.
 * The offers past an instant's first denial are skipped: they would be denied alike.
 */
function offerTwice(spec: Parameters<typeof createLimiter>[0], t0: number, ms: number, perMs: number, cost: number) {
  const clock = new ManualClock(t0);
  const limiter = createLimiter(spec, clock);
  const burst = (spec as { burst?: number; capacity?: number }).burst ?? (spec as { capacity: number }).capacity;
  let offered = 0;
  let admitted = 0;
  for (let t = 0; t <= ms; t++) {
    clock.set(t0 + t);
    const due = Math.floor((2 * perMs * (t + 1) + burst) / cost);
    for (; offered < due; offered++) {
      if ((limiter.tryAcquire("k", cost) as Decision).allowed) admitted += cost;
      // A denial changes nothing: the rest of this instant's requests would be denied alike.
      else offered = due - 1;
    }
  }
  return admitted;
}

describe("offered twice the rate for 2 s, admitted is rate·t + burst exactly", () => {
  // [name, limit per periodMs, burst, cost per request]: high rates offer fewer, larger requests.
  const cases: Array<[string, number, number, number, number]> = [
    ["gcra 3M/s", 3_000_000, 1000, 100, 10],
    ["gcra 1e9/min", 1e9, 60_000, 100_000, 1000],
    ["gcra 10M/s burst 100", 10_000_000, 1000, 100, 1],
    ["gcra 7/3 s", 7, 3000, 2, 1],
    ["gcra 1000/7 ms", 1000, 7, 300, 3],
    ["gcra 100,000/s burst 5", 100_000, 1000, 5, 1],
  ];
  for (const [name, limit, periodMs, burst, cost] of cases) {
    for (const t0 of [0, EPOCH]) {
      it(`${name} from ${t0}`, () => {
        const ms = 2000;
        const g = offerTwice({ algorithm: "gcra", limit, periodMs, burst }, t0, ms, limit / periodMs, cost);
        // Every admission at t leaves tat ≤ t + τ, so admitted·T ≤ 2000 + τ (T = periodMs/limit).
        const bound = Math.floor((ms * limit) / periodMs) + burst;
        expect(g).toBeLessThanOrEqual(bound);
        if ((burst - cost) * periodMs >= limit) {
          // τ − cost·T ≥ 1 ms: the backlog never drains between arrivals, so the bound is met
          // to within one request.
          expect(g).toBeGreaterThan(bound - cost);
        } else {
          // τ < 1 ms + cost·T: each ms starts empty and admits what fits in τ.
          expect(g).toBe((ms + 1) * Math.floor(burst / cost) * cost);
        }
        const leaky = { algorithm: "leaky-bucket", capacity: burst, leakPerSecond: (limit * 1000) / periodMs } as const;
        expect(offerTwice(leaky, t0, ms, limit / periodMs, cost)).toBe(g);
      });
    }
  }
});

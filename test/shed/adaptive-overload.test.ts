// The adaptive limit on a simulated overloaded service (test/shed/pool-sim.ts: a pool of slots,
// an open-loop load at 2–3× its capacity, seeded stalls of a busy host, latency noise of ±10%
// or ±50% per request, a sudden capacity drop), end to end through the Shedder: the p99 of
// admitted requests stays within 2× the unloaded p99, goodput within 90% of what the pool
// serves unloaded, and, with a reserve, every critical request (20% of the offered load)
// passes: through slow start at the flood's first windows, through probes, and after the
// pool loses capacity; and a flood meeting a limit a calm load set keeps those bounds from its
// first request. Whatever the trace, a critical request is refused only while critical
// requests fill the slots the reserve holds. Simulated time, so the bounds are exact and
// replayable from the seed; the real server's figures are bench/shed.mjs's.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runs, SEED } from "../support/seed.ts";
import { type PoolModel, type PoolRun, quantile, runPool } from "./pool-sim.ts";

const arbModel: fc.Arbitrary<PoolModel> = fc
  .record({
    slots: fc.integer({ min: 4, max: 32 }),
    holdMs: fc.integer({ min: 10, max: 100 }),
    jitter: fc.constantFrom(0.1, 0.5),
    stall: fc.constantFrom(0, 0.002, 0.01),
    stallShare: fc.double({ min: 0.1, max: 0.5, noNaN: true }),
  })
  .map(({ slots, holdMs, jitter, stall, stallShare }) => ({
    slots,
    holdMs,
    jitter,
    stallRate: stall,
    stallMs: holdMs * stallShare,
  }));

/** The unloaded run: `slots` closed-loop clients, the pool full and no queue (as bench/shed.mjs calibrates). */
const unloaded = (model: PoolModel, seed: number) => runPool(model, { factor: 1, seconds: 6, seed, closed: true });

/** Probes every 2 s instead of 10: several in a run. */
const RESERVED = { limit: "adaptive", reserve: { 0: 0.75 }, adaptive: { probeIntervalMs: 2000 } } as const;

/** A critical request is refused only while critical requests hold the reserve's slots. */
const keptReserve = (run: PoolRun) => {
  for (const shed of run.criticalSheds) expect(shed.inFlight).toBeGreaterThanOrEqual(shed.reserved);
};

describe(`loadShed({ limit: "adaptive" }) on a simulated pool at 2–3× capacity (seed ${SEED}; replay with SLUICE_SEED)`, () => {
  it("holds the p99 of admitted requests within 2× the unloaded p99, goodput ≥ 90%", () => {
    fc.assert(
      fc.property(arbModel, fc.double({ min: 2, max: 3, noNaN: true }), fc.integer(), (model, factor, seed) => {
        const calm = unloaded(model, seed);
        const run = runPool(model, { factor, seconds: 10, seed, shed: { limit: "adaptive" } });
        expect(quantile(run.latencies, 0.99)).toBeLessThanOrEqual(2 * quantile(calm.latencies, 0.99));
        expect(run.goodput).toBeGreaterThanOrEqual(0.9 * calm.goodput);
      }),
      { seed: SEED, numRuns: runs(15) },
    );
  });

  it("meets a flood after a calm second: the p99 from the flood's first request within 2× the unloaded p99", () => {
    // bench/shed.mjs warms each server with the unloaded load (the pool full, no queue) before
    // the flood: slow start grew the limit 4 → 6 → 9 on 4 in flight (4 ≥ 9 / 2), the flood's
    // first window (its latencies still the calm ones) to 13, and a 4-slot pool queued 9, three
    // latencies deep (p99 2.5× the unloaded one in the first round of a fresh server).
    fc.assert(
      fc.property(arbModel, fc.double({ min: 2, max: 3, noNaN: true }), fc.integer(), (model, factor, seed) => {
        const calm = unloaded(model, seed);
        const run = runPool(model, {
          factor,
          seconds: 6,
          seed,
          calmMs: 1000,
          warmupSeconds: 1,
          shed: { limit: "adaptive" },
        });
        expect(quantile(run.latencies, 0.99)).toBeLessThanOrEqual(2 * quantile(calm.latencies, 0.99));
        // Met lower, the limit must still reach capacity (see the 32-slot case below).
        expect(run.goodput).toBeGreaterThanOrEqual(0.9 * calm.goodput);
      }),
      { seed: SEED, numRuns: runs(15) },
    );
  });

  it("meets a flood after a calm second on a noisy 32-slot pool at full goodput (a case the property's seed missed)", () => {
    // Seed 3: the probe's window read the unloaded latency 35 ms for a mean of 41, the flood's
    // first window (53 ms, noise) read as a queue, and the limit was cut to 4 at the end of slow
    // start: 57% goodput until slow start averaged its flat windows into the long-term latency.
    const model = { slots: 32, holdMs: 41, jitter: 0.5 };
    const calm = unloaded(model, 3);
    const run = runPool(model, { factor: 2.5, seconds: 6, seed: 3, calmMs: 1000, shed: { limit: "adaptive" } });
    expect(run.goodput).toBeGreaterThanOrEqual(0.9 * calm.goodput);
  });

  it("keeps the standing queue short: the median admitted request within 1.35× the unloaded median", () => {
    // On a quiet host (no stalls, ±10% latency) what lifts the median is the queue the limit
    // lets stand in the pool: with a tolerance of 1.3 a 4-slot pool held 2–3 queued (a median
    // of 1.37–1.46× the unloaded one), and that queue sat under every stall's tail too.
    fc.assert(
      fc.property(arbModel, fc.double({ min: 2, max: 3, noNaN: true }), fc.integer(), (model, factor, seed) => {
        const quiet = { ...model, jitter: 0.1, stallRate: 0 };
        const calm = unloaded(quiet, seed);
        const run = runPool(quiet, { factor, seconds: 10, seed, shed: { limit: "adaptive" } });
        expect(quantile(run.latencies, 0.5)).toBeLessThanOrEqual(1.35 * quantile(calm.latencies, 0.5));
      }),
      { seed: SEED, numRuns: runs(15) },
    );
  });

  it("with a reserve, passes every critical request (20% of the load) while the flood is shed", () => {
    fc.assert(
      fc.property(arbModel, fc.double({ min: 2, max: 3, noNaN: true }), fc.integer(), (model, factor, seed) => {
        const run = runPool(model, { factor, seconds: 10, seed, criticalEvery: 5, shed: RESERVED });
        expect(run.criticalOffered).toBeGreaterThan(0);
        keptReserve(run);
        expect(run.criticalShedAt).toEqual([]);
        const calm = unloaded(model, seed);
        expect(quantile(run.latencies, 0.99)).toBeLessThanOrEqual(2 * quantile(calm.latencies, 0.99));
      }),
      { seed: SEED, numRuns: runs(12) },
    );
  });

  it("with a reserve, passes every critical request through stalls of the host several latencies long", () => {
    // A stall of s ms delivers at once what arrived over s: on the real bench (41 ms a request)
    // stalls of up to 240 ms filled the critical level's 13 slots and shed 3.7% of its requests.
    fc.assert(
      fc.property(
        arbModel,
        fc.double({ min: 2, max: 3, noNaN: true }),
        fc.double({ min: 2, max: 6, noNaN: true }),
        fc.integer(),
        (model, factor, stallShare, seed) => {
          const stalled = { ...model, stallRate: 0.0005, stallMs: model.holdMs * stallShare };
          const run = runPool(stalled, { factor, seconds: 10, seed, criticalEvery: 5, shed: RESERVED });
          expect(run.criticalOffered).toBeGreaterThan(0);
          keptReserve(run);
          expect(run.criticalShedAt).toEqual([]);
        },
      ),
      { seed: SEED, numRuns: runs(12) },
    );
  });

  it("after a sudden capacity drop, passes every critical request and brings the p99 back within 2×", () => {
    fc.assert(
      fc.property(
        arbModel,
        fc.double({ min: 2, max: 2.5, noNaN: true }),
        fc.double({ min: 0.7, max: 0.9, noNaN: true }),
        fc.integer({ min: 3000, max: 5000 }),
        fc.integer(),
        (model, factor, share, atMs, seed) => {
          const change = { atMs, slots: Math.max(3, Math.round(model.slots * share)), holdMs: model.holdMs };
          const run = runPool({ ...model, change }, { factor, seconds: 10, seed, criticalEvery: 5, shed: RESERVED });
          keptReserve(run);
          expect(run.criticalShedAt).toEqual([]);
          // Requests sent from 2 s after the drop on: within 2× the dropped pool's unloaded p99.
          const after = run.latencies.filter((_, i) => (run.arrivals[i] as number) >= atMs + 2000);
          const calm = unloaded({ ...model, slots: change.slots }, seed);
          expect(quantile(after, 0.99)).toBeLessThanOrEqual(2 * quantile(calm.latencies, 0.99));
        },
      ),
      { seed: SEED, numRuns: runs(8) },
    );
  });
});

// The adaptive limit on fixed windows (tables) and on synthetic latency traces (seeded
// properties): it stays within its bounds, converges near a service's capacity under
// overload, re-measures the unloaded latency in probes, and recovers after a latency spike.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SEED } from "../../test/support/seed.ts";
import { mulberry32 } from "../core/seeded-random.ts";
import {
  effectiveLimit,
  GRADIENT_DEFAULTS,
  type GradientParams,
  type GradientSample,
  type GradientState,
  gradientStep,
  initialGradient,
  steadyLimit,
} from "./gradient.ts";

// The tables were written for a tolerance of 1.3 (the mechanics, not the default).
const P: GradientParams = { ...GRADIENT_DEFAULTS, tolerance: 1.3, probeIntervalMs: 1e12 };
const warm = (over: Partial<GradientState> = {}): GradientState => ({
  limit: 100,
  longRtt: 10,
  slowStart: false,
  windows: 1000,
  nextProbeAt: 1e12,
  resume: undefined,
  peakRtt: 0,
  probeRtt: 0,
  probePeak: 0,
  probeWindows: 0,
  ...over,
});

describe("gradientStep at fixed windows", () => {
  it.each([
    // short rtt, max in flight → limit after one window (long-term latency 10, smoothing 0.2)
    { rtt: 10, inFlight: 100, limit: 102, why: "no queueing: grows by √limit × smoothing" },
    { rtt: 13, inFlight: 100, limit: 102, why: "within tolerance (1.3 × long): still grows" },
    { rtt: 20, inFlight: 100, limit: 65, why: "queueing: cut at once by the gradient 1.3×10/20 = 0.65" },
    { rtt: 100, inFlight: 100, limit: 50, why: "gradient clamped at 0.5: at most halved per window" },
    { rtt: 10, inFlight: 40, limit: 100, why: "app-limited (under half the limit in flight): no growth" },
    {
      rtt: 10,
      inFlight: 20,
      limited: true,
      limit: 102,
      why: "under half in flight, but the limit refused some: grows",
    },
    { rtt: 16, inFlight: 40, limit: 81.25, why: "app-limited but queueing: still cut" },
    { rtt: 10, inFlight: 100, slowStart: true, limit: 150, why: "slow start: 1.5× per window" },
    { rtt: 12, inFlight: 100, slowStart: true, limit: 102, why: "slow start, latency rising (> 1.1×): additive step" },
    {
      rtt: 10,
      maxRtt: 14,
      inFlight: 100,
      slowStart: true,
      limit: 102,
      why: "slow start, one request queued (max > 1.3×): additive step",
    },
    { rtt: 10, maxRtt: 13, inFlight: 100, slowStart: true, limit: 150, why: "slow start, max within tolerance" },
    { rtt: 10, inFlight: 40, slowStart: true, limit: 100, why: "slow start, app-limited: no growth" },
    { rtt: 20, inFlight: 100, slowStart: true, limit: 65, why: "slow start ends at the first queued window" },
    {
      rtt: 14,
      inFlight: 100,
      slowStart: true,
      limit: 100 / 1.5,
      why: "slow start ends: back to the last limit that did not queue if the gradient cuts less",
    },
  ])("$why", ({ rtt, maxRtt, inFlight, limit, slowStart = false, limited = false }) => {
    const next = gradientStep(
      warm({ slowStart }),
      { rtt, maxRtt: maxRtt ?? rtt, maxInFlight: inFlight, limited },
      0,
      P,
      0,
    );
    expect(next.limit).toBeCloseTo(limit, 6);
    expect(next.resume).toBeUndefined();
    expect(next.slowStart).toBe(slowStart && rtt <= 13);
  });

  it("clamps the limit to [minLimit, maxLimit]", () => {
    const bounds = { ...P, minLimit: 60, maxLimit: 120 };
    expect(gradientStep(warm(), { rtt: 100, maxInFlight: 100 }, 0, bounds, 0).limit).toBe(60);
    expect(gradientStep(warm({ slowStart: true }), { rtt: 10, maxInFlight: 100 }, 0, bounds, 0).limit).toBe(120);
  });

  it("grows to at most 1.5× the concurrency the window's requests were admitted at", () => {
    const step = (admittedInFlight: number, slowStart: boolean) =>
      gradientStep(warm({ slowStart }), { rtt: 10, maxInFlight: 100, admittedInFlight }, 0, P, 0).limit;
    expect(step(80, true)).toBe(120); // 1.5 × 80, not 150
    expect(step(60, true)).toBe(100); // 1.5 × 60 is under the limit: held, never cut
    expect(step(100, true)).toBe(150);
    expect(step(60, false)).toBe(100);
    expect(step(70, false)).toBe(102);
    // Unknown (or a reserve's share held it down): unbounded.
    expect(gradientStep(warm(), { rtt: 10, maxInFlight: 20, limited: true }, 0, P, 0).limit).toBe(102);
  });

  it("in slow start, averages flat windows into the long-term latency as a mean of all so far", () => {
    const state = warm({ slowStart: true, windows: 3, peakRtt: 12 });
    // Flat (within 1.1× and the max within 1.3× the peak): weight 1/4.
    expect(gradientStep(state, { rtt: 10.8, maxInFlight: 100 }, 0, P, 0).longRtt).toBeCloseTo(10.2, 9);
    // Rising: the slow average only.
    expect(gradientStep(state, { rtt: 11.5, maxInFlight: 100 }, 0, P, 0).longRtt).toBeCloseTo(10 + 1.5 * (2 / 601), 9);
    // After slow start: the slow average only.
    expect(gradientStep({ ...state, slowStart: false }, { rtt: 10.8, maxInFlight: 100 }, 0, P, 0).longRtt).toBeCloseTo(
      10 + 0.8 * (2 / 601),
      9,
    );
  });

  it("ignores windows without a usable latency", () => {
    const state = warm();
    for (const rtt of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(gradientStep(state, { rtt, maxInFlight: 100 }, 0, P, 0)).toBe(state);
    }
  });

  it("averages the long-term latency exponentially over longWindow windows that did not queue", () => {
    const late = gradientStep(warm({ longRtt: 10 }), { rtt: 12, maxInFlight: 1 }, 0, P, 0);
    expect(late.longRtt).toBeCloseTo(10 + 2 * (2 / 601), 9);
    // A queued window (over 1.3 × 10) leaves it where it was: queueing does not raise the bar.
    expect(gradientStep(warm({ longRtt: 10 }), { rtt: 13.5, maxInFlight: 100 }, 0, P, 0).longRtt).toBe(10);
  });

  it("lets the long-term latency fall fast: a faster window halves the gap", () => {
    const next = gradientStep(warm({ longRtt: 50 }), { rtt: 10, maxInFlight: 100 }, 0, P, 0);
    expect(next.longRtt).toBe(30);
  });

  it("probes: holds minLimit for a window, restarts the long-term latency from it, resumes, reschedules with jitter", () => {
    const params = GRADIENT_DEFAULTS;
    const due = gradientStep(warm({ nextProbeAt: 5000, longRtt: 30 }), { rtt: 30, maxInFlight: 100 }, 5000, params, 0);
    expect(due.limit).toBe(params.minLimit);
    expect(due.resume).toBeCloseTo(102, 0);
    const after = gradientStep(due, { rtt: 8, maxInFlight: 4 }, 5100, params, 0.5);
    expect(after).toEqual({
      limit: due.resume,
      longRtt: 8,
      slowStart: false,
      windows: 1002,
      nextProbeAt: 15_100,
      resume: undefined,
      peakRtt: 8,
      probeRtt: 0,
      probePeak: 0,
      probeWindows: 0,
    });
    expect(gradientStep(due, { rtt: 8, maxInFlight: 4 }, 5100, params, 0).nextProbeAt).toBe(14_100);
  });

  it("probes on while its windows drain a queue: a first window over the bar, then each faster than the last", () => {
    const params = GRADIENT_DEFAULTS;
    const due = gradientStep(warm({ nextProbeAt: 5000, longRtt: 10 }), { rtt: 12, maxInFlight: 100 }, 5000, params, 0);
    // The first window still waits behind the queue built before the probe: 30 > 1.3 × 10.
    const draining = gradientStep(due, { rtt: 30, maxInFlight: 30 }, 5100, params, 0);
    expect(draining).toMatchObject({ limit: params.minLimit, resume: due.resume, probeRtt: 30, probeWindows: 1 });
    const faster = gradientStep(draining, { rtt: 14, maxInFlight: 4 }, 5200, params, 0);
    expect(faster).toMatchObject({ limit: params.minLimit, probeRtt: 14, probeWindows: 2 });
    // No faster (within twice its standard error): drained; the faster of the two is the measure.
    const done = gradientStep(faster, { rtt: 15, maxInFlight: 4, sem: 1 }, 5300, params, 0);
    expect(done).toMatchObject({ limit: due.resume, longRtt: 14, resume: undefined, probeWindows: 0 });
    // A first window within the bar ends the probe at once; at most 5 windows in all.
    expect(gradientStep(due, { rtt: 12, maxInFlight: 4 }, 5100, params, 0).resume).toBeUndefined();
    let state = due;
    for (let i = 0; i < 5; i++) state = gradientStep(state, { rtt: 100 - 10 * i, maxInFlight: 4 }, 5100 + i, params, 0);
    expect(state).toMatchObject({ resume: undefined, longRtt: 60 });
  });

  it("keeps the probe's slowest latency as the unloaded spread, at most 2× its mean", () => {
    const due = warm({ nextProbeAt: 0, resume: 50, limit: 4 });
    expect(gradientStep(due, { rtt: 10, maxRtt: 15, maxInFlight: 4 }, 0, P, 0).peakRtt).toBe(15);
    expect(gradientStep(due, { rtt: 10, maxRtt: 300, maxInFlight: 4 }, 0, P, 0).peakRtt).toBe(20);
    // In slow start, a window's slowest request is compared with 1.3 × that spread: noise of ±50% grows 1.5×.
    const noisy = warm({ slowStart: true, peakRtt: 15 });
    expect(gradientStep(noisy, { rtt: 10, maxRtt: 16, maxInFlight: 100 }, 0, P, 0).limit).toBe(150);
    expect(gradientStep(noisy, { rtt: 10, maxRtt: 20, maxInFlight: 100 }, 0, P, 0).limit).toBeCloseTo(102, 6);
  });

  it("moves nothing on a window slower or faster by chance: twice its standard error is noise", () => {
    // 14 against 1.3 × 10 queues, unless its standard error is 0.5 or more.
    expect(gradientStep(warm(), { rtt: 14, maxInFlight: 100, sem: 0.4 }, 0, P, 0).limit).toBeLessThan(100);
    expect(gradientStep(warm(), { rtt: 14, maxInFlight: 100, sem: 0.5 }, 0, P, 0).limit).toBeCloseTo(102, 6);
    // 8 against 10 halves the gap, unless within noise: then the slow average.
    expect(gradientStep(warm(), { rtt: 8, maxInFlight: 100, sem: 0.9 }, 0, P, 0).longRtt).toBe(9);
    expect(gradientStep(warm(), { rtt: 8, maxInFlight: 100, sem: 1 }, 0, P, 0).longRtt).toBeCloseTo(
      10 - 2 * (2 / 601),
      9,
    );
  });

  it("starts with a probe at minLimit, then resumes at initialLimit clamped to the bounds, in slow start", () => {
    const params = { ...P, probeIntervalMs: 10_000, initialLimit: 20 };
    const start = initialGradient({ ...params, initialLimit: 2, minLimit: 4 }, 1000);
    expect(start).toEqual({
      limit: 4,
      longRtt: 0,
      peakRtt: 0,
      slowStart: true,
      windows: 0,
      nextProbeAt: 11_000,
      resume: 4,
      probeRtt: 0,
      probePeak: 0,
      probeWindows: 0,
    });
    const first = gradientStep(initialGradient(params, 0), { rtt: 30, maxInFlight: 4 }, 100, params, 0.5);
    expect(first).toEqual({
      limit: 20,
      longRtt: 30,
      slowStart: true,
      windows: 1,
      nextProbeAt: 10_100,
      resume: undefined,
      peakRtt: 30,
      probeRtt: 0,
      probePeak: 0,
      probeWindows: 0,
    });
    expect(initialGradient(GRADIENT_DEFAULTS, 0).resume).toBe(4);
    expect(effectiveLimit(warm({ limit: 7.9 }))).toBe(7);
  });
});

describe("steadyLimit: the limit a reserve is a share of", () => {
  it.each([
    { state: { limit: 37.6 }, steady: 37, why: "settled: the effective limit" },
    { state: { limit: 4, resume: 52.9 }, steady: 52, why: "probing at minLimit: the limit it resumes" },
    { state: { limit: 6, slowStart: true }, steady: 1000, why: "slow start: capacity unknown, maxLimit" },
    { state: { limit: 4, resume: 4, slowStart: true }, steady: 1000, why: "the first probe is in slow start" },
  ])("$why", ({ state, steady }) => {
    expect(steadyLimit(warm(state), GRADIENT_DEFAULTS)).toBe(steady);
  });
});

/** A service with `capacity` slots: below it the latency is `base`; above it requests queue. */
interface Model {
  capacity: number;
  base: number;
}

/**
 * Runs `windows` windows of 100 ms with `offered` requests wanting to be in flight; returns the
 * limits, the latencies over `base`, and the queueing alone (in flight over capacity, at least
 * 1). Without `noise` each window's latency is ±10% off; with it, each window is 20 requests
 * each `noise` off (uniformly) and carries their standard error, as AdaptiveLimit measures it.
 */
function run(
  model: (i: number) => Model,
  windows: number,
  offered: (i: number) => number,
  params: GradientParams,
  random: () => number,
  noise?: number,
): { limits: number[]; rtts: number[]; queues: number[] } {
  let state = initialGradient(params, 0);
  const limits: number[] = [];
  const rtts: number[] = [];
  const queues: number[] = [];
  for (let i = 0; i < windows; i++) {
    const { capacity, base } = model(i);
    const inFlight = Math.min(effectiveLimit(state), offered(i));
    const queue = Math.max(1, inFlight / capacity);
    const limited = offered(i) > effectiveLimit(state);
    let sample: GradientSample;
    if (noise === undefined) {
      sample = { rtt: base * queue * (0.9 + 0.2 * random()), maxInFlight: inFlight, limited };
    } else {
      const n = 20;
      let sum = 0;
      let squares = 0;
      let max = 0;
      for (let k = 0; k < n; k++) {
        const x = base * queue * (1 + noise * (2 * random() - 1));
        sum += x;
        squares += x * x;
        max = Math.max(max, x);
      }
      const rtt = sum / n;
      const sem = Math.sqrt(Math.max(0, squares - n * rtt * rtt) / (n - 1) / n);
      sample = { rtt, maxRtt: max, sem, maxInFlight: inFlight, limited };
    }
    state = gradientStep(state, sample, (i + 1) * 100, params, random());
    limits.push(state.limit);
    rtts.push(sample.rtt / base);
    queues.push(queue);
  }
  return { limits, rtts, queues };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const arbModel = fc.record({
  capacity: fc.integer({ min: 8, max: 300 }),
  base: fc.double({ min: 1, max: 200, noNaN: true }),
});

describe(`the adaptive limit on synthetic traces (seed ${SEED}; replay with SLUICE_SEED)`, () => {
  it("stays within [minLimit, maxLimit] on any trace and any bounds", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 0, max: 500 }),
        fc.array(
          fc.record({
            rtt: fc.double({ min: -1, max: 1e6 }),
            maxInFlight: fc.nat(5000),
            limited: fc.boolean(),
            gap: fc.nat(20_000),
          }),
          { maxLength: 300 },
        ),
        (minLimit, extra, trace) => {
          const params = { ...GRADIENT_DEFAULTS, minLimit, maxLimit: minLimit + extra, probeIntervalMs: 3000 };
          let state = initialGradient(params, 0);
          let now = 0;
          for (const { rtt, maxInFlight, limited, gap } of trace) {
            now += gap;
            state = gradientStep(state, { rtt, maxInFlight, limited }, now, params, 0.5);
            expect(state.limit).toBeGreaterThanOrEqual(minLimit);
            expect(state.limit).toBeLessThanOrEqual(minLimit + extra);
            expect(effectiveLimit(state)).toBeGreaterThanOrEqual(1);
          }
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it("converges near capacity under 3× overload, latency within 2× the unloaded one", () => {
    fc.assert(
      fc.property(arbModel, fc.integer(), (model, seed) => {
        const { limits, rtts } = run(
          () => model,
          1200,
          () => model.capacity * 3,
          GRADIENT_DEFAULTS,
          mulberry32(seed),
        );
        const settled = limits.slice(-400);
        expect(mean(settled)).toBeGreaterThanOrEqual(model.capacity * 0.8);
        expect(mean(settled)).toBeLessThanOrEqual(model.capacity * 2);
        expect(mean(rtts.slice(-400))).toBeLessThanOrEqual(1.5);
        // Every window, slow start included, within 2.5× the unloaded latency (one slow-start
        // step may overshoot before a window shows it); settled, within 2×.
        expect(Math.max(...rtts)).toBeLessThanOrEqual(2.5);
        expect(Math.max(...rtts.slice(-400))).toBeLessThanOrEqual(2);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("recovers after a latency spike (the limit falls during it, and comes back near capacity)", () => {
    fc.assert(
      fc.property(
        arbModel,
        fc.double({ min: 3, max: 20, noNaN: true }),
        fc.integer({ min: 20, max: 300 }),
        fc.integer(),
        (model, factor, length, seed) => {
          const start = 600;
          const spiked = (i: number) =>
            i >= start && i < start + length ? { capacity: model.capacity, base: model.base * factor } : model;
          const params = GRADIENT_DEFAULTS;
          const { limits } = run(spiked, start + length + 600, () => model.capacity * 3, params, mulberry32(seed));
          const before = mean(limits.slice(start - 100, start));
          expect(Math.min(...limits.slice(start, start + length))).toBeLessThan(before);
          expect(mean(limits.slice(-200))).toBeGreaterThanOrEqual(model.capacity * 0.8);
          expect(mean(limits.slice(-200))).toBeLessThanOrEqual(model.capacity * 2);
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("converges near capacity under 3× overload with latency noise of ±50% per request", () => {
    fc.assert(
      fc.property(arbModel, fc.integer(), (model, seed) => {
        const { limits, queues } = run(
          () => model,
          1200,
          () => model.capacity * 3,
          GRADIENT_DEFAULTS,
          mulberry32(seed),
          0.5,
        );
        const settled = limits.slice(-400);
        expect(mean(settled)).toBeGreaterThanOrEqual(model.capacity * 0.8);
        expect(mean(settled)).toBeLessThanOrEqual(model.capacity * 2);
        // The queue the limit lets build (the noise aside): as without noise.
        expect(mean(queues.slice(-400))).toBeLessThanOrEqual(1.5);
        expect(Math.max(...queues.slice(-400))).toBeLessThanOrEqual(2);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("follows a sudden capacity drop mid-trace down, within bounds, with or without noise", () => {
    fc.assert(
      fc.property(
        arbModel,
        fc.double({ min: 0.2, max: 0.8, noNaN: true }),
        fc.constantFrom(undefined, 0.5),
        fc.integer(),
        (model, share, noise, seed) => {
          const drop = 600;
          const dropped = { capacity: Math.max(4, Math.round(model.capacity * share)), base: model.base };
          const { limits, queues } = run(
            (i) => (i < drop ? model : dropped),
            drop + 600,
            () => model.capacity * 3,
            GRADIENT_DEFAULTS,
            mulberry32(seed),
            noise,
          );
          for (const limit of limits) {
            expect(limit).toBeGreaterThanOrEqual(GRADIENT_DEFAULTS.minLimit);
            expect(limit).toBeLessThanOrEqual(GRADIENT_DEFAULTS.maxLimit);
          }
          // Within 20 windows (2 s) of the drop the queue is back within 2×, and stays there.
          expect(Math.max(...queues.slice(drop + 20))).toBeLessThanOrEqual(2);
          const settled = mean(limits.slice(-200));
          expect(settled).toBeGreaterThanOrEqual(dropped.capacity * 0.8);
          expect(settled).toBeLessThanOrEqual(dropped.capacity * 2);
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("finds capacity again after probes even when it started overloaded at a high limit", () => {
    const model = { capacity: 20, base: 5 };
    const params = { ...GRADIENT_DEFAULTS, initialLimit: 500 };
    const { limits, rtts } = run(
      () => model,
      2000,
      () => 1000,
      params,
      mulberry32(SEED),
    );
    expect(mean(limits.slice(-500))).toBeLessThanOrEqual(40);
    expect(mean(rtts.slice(-500))).toBeLessThanOrEqual(2);
  });
});

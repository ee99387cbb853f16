// Event-loop pressure at fixed samples: one more level shed per sample over the threshold,
// nothing moves in the dead zone, a level comes back only after rampSamples calm samples.
import { describe, expect, it } from "vitest";
import { NO_PRESSURE, type PressureState, pressureStep } from "./pressure.ts";

const params = { deadZone: 0.2, rampSamples: 3 };
const trace = (loads: number[], from: PressureState = NO_PRESSURE) => {
  const cutoffs: number[] = [];
  let state = from;
  for (const load of loads) {
    state = pressureStep(state, load, params);
    cutoffs.push(state.cutoff);
  }
  return cutoffs;
};

describe("pressureStep", () => {
  it.each([
    { loads: [0.5, 1, 0.9], cutoffs: [10, 10, 10], why: "at or under the threshold: nothing shed" },
    { loads: [1.5, 1.1, 3], cutoffs: [9, 8, 7], why: "over: sheds from the least critical level up, one per sample" },
    { loads: [2, 2, 0.9, 0.8, 0.95, 0.85], cutoffs: [9, 8, 8, 8, 8, 8], why: "in the dead zone [0.8, 1]: holds" },
    {
      loads: [2, 2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
      cutoffs: [9, 8, 8, 8, 9, 9, 9, 10],
      why: "calm: one level back per 3 samples",
    },
    {
      loads: [2, 0.5, 0.5, 0.9, 0.5, 0.5, 0.5],
      cutoffs: [9, 9, 9, 9, 9, 9, 10],
      why: "a dead-zone sample restarts the ramp",
    },
    { loads: [2, 0.5, 0.5, 1.2, 0.5], cutoffs: [9, 9, 9, 8, 8], why: "over again: sheds again at once" },
  ])("$why", ({ loads, cutoffs }) => {
    expect(trace(loads)).toEqual(cutoffs);
  });

  it("never sheds priority 0 for pressure", () => {
    expect(trace(new Array(20).fill(10)).at(-1)).toBe(1);
  });

  it("does not oscillate on a load hovering around the threshold", () => {
    // Alternating just over and just under: sheds while over, holds in the dead zone, never ramps back.
    const cutoffs = trace([1.05, 0.95, 1.05, 0.95, 1.05, 0.95]);
    expect(cutoffs).toEqual([9, 9, 8, 8, 7, 7]);
  });
});

// The seed machinery: every property runs from the configured seed, and a printed seed (and
// path) replays the same counter-example.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_SEED, runs, SEED, seedFrom } from "./seed.ts";

describe("SLUICE_SEED", () => {
  it("parses the integers fast-check prints and refuses anything else", () => {
    expect(seedFrom({})).toBe(DEFAULT_SEED);
    expect(seedFrom({ SLUICE_SEED: "" })).toBe(DEFAULT_SEED);
    expect(seedFrom({ SLUICE_SEED: "42" })).toBe(42);
    expect(seedFrom({ SLUICE_SEED: "-1708234" })).toBe(-1708234);
    expect(() => seedFrom({ SLUICE_SEED: "1.5" })).toThrow(/SLUICE_SEED must be an integer.*"1.5"/);
    expect(() => seedFrom({ SLUICE_SEED: "abc" })).toThrow(/SLUICE_SEED/);
  });

  it("every property runs from the configured seed, and the printed seed and path replay the failure", () => {
    const property = fc.property(fc.array(fc.integer()), (xs) => xs.reduce((a, b) => a + b, 0) < 1000);
    const first = fc.check(property, { reporter: () => {} });
    expect(first.failed).toBe(true);
    expect(first.seed).toBe(SEED);
    const again = fc.check(property, { reporter: () => {} });
    expect(again.counterexample).toEqual(first.counterexample);
    const replayed = fc.check(property, {
      seed: first.seed,
      path: first.counterexamplePath ?? "",
      reporter: () => {},
    });
    expect(replayed.failed).toBe(true);
    expect(replayed.counterexample).toEqual(first.counterexample);
  });

  it("runs() scales run counts by SLUICE_RUNS_SCALE, never below 1", () => {
    expect(runs(300, {})).toBe(300);
    expect(runs(300, { SLUICE_RUNS_SCALE: "0.25" })).toBe(75);
    expect(runs(1, { SLUICE_RUNS_SCALE: "0.01" })).toBe(1);
    expect(runs(300, { SLUICE_RUNS_SCALE: "nonsense" })).toBe(300);
  });
});

// loadShed's options are checked where they enter: unknown keys and bad values throw
// ArgumentError naming them.
import { describe, expect, it } from "vitest";
import { ArgumentError } from "../core/errors.ts";
import { checkShedOptions, priorityOf } from "./options.ts";

describe("checkShedOptions", () => {
  it.each([
    [{ limit: 10, reserv: { 1: 0.2 } }, /unknown option `reserv`/],
    [{ limit: 10, adaptive: { minLimit: 2 } }, /`adaptive` must be set only with limit: "adaptive"/],
    [{ limit: "adaptive", adaptive: { min: 2 } }, /loadShed `adaptive`: unknown option `min`/],
    [{}, /needs `limit`, `maxEventLoopDelayMs` or `maxEventLoopUtilization`/],
    [{ limit: 0 }, /`limit` must be a positive integer \(got 0\)/],
    [{ limit: 2.5 }, /`limit` must be a positive integer \(got 2.5\)/],
    [{ limit: "auto" }, /`limit` must be a positive integer \(got "auto"\)/],
    [{ limit: 10, priority: 3 }, /`priority` must be a function \(got 3\)/],
    [{ limit: 10, reserve: { 9: 0.2 } }, /`reserve` must be keyed by priority levels 0–8 \(got "9"\)/],
    [{ limit: 10, reserve: { 1: 1.2 } }, /`reserve\[1\]` must be a share in \(0, 1\) \(got 1.2\)/],
    [{ limit: 10, reserve: { 0: 0.5, 1: 0.5 } }, /`reserve` must be shares that add up to less than 1 \(got 1\)/],
    [{ limit: 10, reserve: [0.2] }, /`reserve` must be an object/],
    [{ maxEventLoopDelayMs: 50, reserve: { 1: 0.2 } }, /`reserve` must be set with `limit`/],
    [{ maxEventLoopDelayMs: -1 }, /`maxEventLoopDelayMs` must be a positive finite number \(got -1\)/],
    [{ maxEventLoopUtilization: 1.5 }, /`maxEventLoopUtilization` must be a number in \(0, 1\] \(got 1.5\)/],
    [{ limit: 10, deadZone: 1 }, /`deadZone` must be below 1/],
    [{ limit: 10, rampSamples: 0.5 }, /`rampSamples` must be a positive integer/],
    [{ limit: 10, retryAfterSeconds: 0 }, /`retryAfterSeconds` must be a positive integer/],
    [{ limit: 10, name: "" }, /`name` must be a non-empty string/],
    [{ limit: 10, clock: {} }, /`clock` must be a Clock/],
    [
      { limit: "adaptive", adaptive: { minLimit: 50, maxLimit: 10 } },
      /`adaptive.minLimit` must be at most maxLimit \(10\)/,
    ],
    [{ limit: "adaptive", adaptive: { tolerance: 0.9 } }, /`adaptive.tolerance` must be at least 1/],
    [{ limit: "adaptive", adaptive: { smoothing: 0 } }, /`adaptive.smoothing` must be a number in \(0, 1\]/],
    [null, /loadShed options must be an object \(got null\)/],
  ])("%o → %s", (options, message) => {
    expect(() => checkShedOptions(options)).toThrow(ArgumentError);
    expect(() => checkShedOptions(options)).toThrow(message);
  });

  it("fills in the defaults and accepts the adapter's own keys", () => {
    const config = checkShedOptions({ limit: "adaptive", adaptive: { maxLimit: 200 }, onShed: 1 }, ["onShed"]);
    expect(config).toMatchObject({
      limit: "adaptive",
      reserve: {},
      sampleIntervalMs: 250,
      pressure: { deadZone: 0.2, rampSamples: 3 },
      retryAfterSeconds: 1,
      name: "default",
    });
    expect(config.adaptive).toMatchObject({ maxLimit: 200, minLimit: 4, tolerance: 1.2 });
  });
});

describe("priorityOf", () => {
  it("is 5 without a function, the function's integer 0–9 otherwise, an ArgumentError for anything else", () => {
    expect(priorityOf(undefined, {})).toBe(5);
    expect(priorityOf(() => 0, {})).toBe(0);
    expect(priorityOf(() => 9, {})).toBe(9);
    for (const bad of [-1, 10, 2.5, Number.NaN, "1"]) {
      expect(() => priorityOf(() => bad as number, {})).toThrow(/`priority\(request\)` must be an integer from 0 to 9/);
    }
  });
});

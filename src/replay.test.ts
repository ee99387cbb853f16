import { ArgumentError, ConfigError, classify, replay } from "sluice";
import { describe, expect, it } from "vitest";

describe("replay", () => {
  it("decides timestamps and events in order on a manual clock", () => {
    const spec = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;
    const out = replay([0, 10, { at: 20, key: "b" }, { at: 30, cost: 1 }, { at: 1000, cost: 2 }], spec);
    expect(out.map((d) => d.allowed)).toEqual([true, true, true, false, true]);
    expect(out[3]).toMatchObject({ retryAfterMs: 970, remaining: 0 });
  });

  it("accepts composites and names the bad event", () => {
    const spec = [
      { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
    ] as const;
    expect(replay([0, 0], spec).map((d) => d.parts?.length)).toEqual([2, 2]);
    expect(() => replay([0, Number.NaN], spec)).toThrow(ArgumentError);
    expect(() => replay([0, Number.NaN], spec)).toThrow(/events\[1\]\.at/);
    expect(() => replay([{ at: 0, cost: 0 }], spec)).toThrow(/events\[0\]: cost must be a positive integer/);
    expect(() => replay([0], { algorithm: "nope" } as never)).toThrow(ConfigError);
  });
});

describe("classify (the seed's classifyPings)", () => {
  it("two pings per second", () => {
    expect(classify([0, 1, 2, 999, 1000, 1001, 1002], { type: "sliding", limit: 2, windowMs: 1000 })).toEqual([
      true,
      true,
      false,
      false,
      true,
      true,
      false,
    ]);
  });
});

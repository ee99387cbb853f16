import { describe, expect, it } from "vitest";
import { ArgumentError, ConfigError } from "./errors.ts";
import { shareOf } from "./share.ts";

describe("shareOf: one of n processes' share of a limit", () => {
  it.each([
    [{ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 4, { limit: 25, windowMs: 60_000 }],
    [{ algorithm: "fixed-window", limit: 10, windowMs: 1000, anchor: "first" }, 3, { limit: 3, anchor: "first" }],
    [{ algorithm: "sliding-log", limit: 5, windowMs: 1000 }, 8, { limit: 1 }], // never below 1
    [{ algorithm: "concurrency", limit: 10, leaseMs: 5000 }, 4, { limit: 2, leaseMs: 5000 }], // slots in flight
    [{ algorithm: "sliding-window", limit: 7, windowMs: 1000 }, 1, { limit: 7 }],
    [{ algorithm: "token-bucket", capacity: 20, refillPerSecond: 10 }, 4, { capacity: 5, refillPerSecond: 2.5 }],
    [{ algorithm: "leaky-bucket", capacity: 9, leakPerSecond: 3 }, 2, { capacity: 4, leakPerSecond: 1.5 }],
    [{ algorithm: "gcra", limit: 60, periodMs: 60_000, burst: 10 }, 5, { limit: 12, periodMs: 60_000, burst: 2 }],
    [{ algorithm: "gcra", limit: 60, periodMs: 60_000 }, 5, { limit: 12, burst: 12 }],
    [{ type: "fixed", limit: 10, windowMs: 1000 }, 2, { algorithm: "fixed-window", limit: 5 }],
  ] as const)("%j over %i instances", (spec, instances, expected) => {
    expect(shareOf(spec, instances)).toMatchObject(expected);
  });

  it("shares each member of a composite", () => {
    const rule = [
      { algorithm: "sliding-log", limit: 10, windowMs: 1000 },
      { algorithm: "sliding-log", limit: 100, windowMs: 60_000 },
    ] as const;
    expect(shareOf(rule, 10)).toMatchObject([{ limit: 1 }, { limit: 10 }]);
  });

  it("refuses a bad instance count or spec, naming it", () => {
    const spec = { algorithm: "sliding-log", limit: 10, windowMs: 1000 } as const;
    expect(() => shareOf(spec, 0)).toThrow(ArgumentError);
    expect(() => shareOf(spec, 1.5)).toThrow(/`instances` must be a positive integer \(got 1.5\)/);
    expect(() => shareOf({ algorithm: "sliding-log", limit: 0, windowMs: 1000 }, 2)).toThrow(ConfigError);
  });
});

// Seed 000's reference examples, through the public API, unchanged in meaning (docs/semantics.md §9).

import { classify, createLimiter, DuplicateRuleError, ManualClock, RateLimiterService, UnknownRuleError } from "sluice";
import { describe, expect, it } from "vitest";

describe("seed 000", () => {
  it("two pings per second with a sliding log", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ type: "sliding", limit: 2, windowMs: 1000 }, clock);
    const seen = [0, 500, 999, 1000, 1499, 1500].map((t) => {
      clock.set(t);
      return limiter.tryAcquire("user").allowed;
    });
    // 1000: the ping at 0 is exactly one window old and no longer counts.
    expect(seen).toEqual([true, true, false, true, false, true]);
  });

  it("classify returns what classifyPings returns", () => {
    expect(classify([0, 100, 200, 1000, 1100, 1101], { type: "sliding", limit: 2, windowMs: 1000 })).toEqual([
      true,
      true,
      false,
      true,
      true,
      false,
    ]);
    expect(classify([0, 100, 200, 999, 1000], { type: "fixed", limit: 2, windowMs: 1000 })).toEqual([
      true,
      true,
      false,
      false,
      true,
    ]);
    expect(classify([0, 0, 0, 250, 500], { type: "bucket", capacity: 2, refillPerSecond: 4 })).toEqual([
      true,
      true,
      false,
      true,
      true,
    ]);
  });

  it("the service: named rules, duplicates and unknown rules", () => {
    const clock = new ManualClock();
    const service = new RateLimiterService(clock);
    service.addRule("ping", { type: "sliding", limit: 2, windowMs: 1000 });
    expect(() => service.addRule("ping", { type: "fixed", limit: 1, windowMs: 1000 })).toThrow(DuplicateRuleError);
    expect(() => service.check("nope", "user")).toThrow(UnknownRuleError);
    expect(service.check("ping", "user").allowed).toBe(true);
    expect(service.check("ping", "user").allowed).toBe(true);
    expect(service.check("ping", "user").allowed).toBe(false);
    expect(service.check("ping", "other").allowed).toBe(true);
  });
});

// combine() at fixed figures: the strictest of the members, and on a tie in `remaining` the
// limit of the first member in spec order (what headers and Decision.limit both report).
import { describe, expect, it } from "vitest";
import { type Decision, decision } from "../algorithms/decision.ts";
import { createLimiter } from "../limiter.ts";
import { ManualClock } from "./clock.ts";
import { combine, unconsumed } from "./composite.ts";

describe("combine", () => {
  it("the greatest reset and delay whichever member comes last", () => {
    // The last member has the smaller figures: taking its own would shorten them.
    const a = decision(true, 5, 3, 0, 900, 30);
    const b = decision(true, 9, 4, 0, 100, 10);
    expect(combine([a, b])).toMatchObject({ allowed: true, remaining: 3, resetMs: 900, delayMs: 30 });
  });

  it("takes the least remaining, the greatest retry, reset and delay", () => {
    const a = decision(true, 5, 3, 0, 400, 20);
    const b = decision(true, 9, 1, 0, 900, 10);
    expect(combine([a, b])).toEqual({
      allowed: true,
      limit: 9,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 900,
      delayMs: 20,
      parts: [a, b],
    });
    const c = decision(false, 4, 0, 700, 800);
    expect(combine([a, c, b])).toMatchObject({
      allowed: false,
      limit: 4,
      remaining: 0,
      retryAfterMs: 700,
      resetMs: 900,
      delayMs: 0,
    });
  });

  it("on a tie in remaining reports the first member's limit, in spec order", () => {
    const a = decision(true, 3, 2, 0, 100);
    const b = decision(true, 5, 2, 0, 100);
    expect(combine([a, b]).limit).toBe(3);
    expect(combine([b, a]).limit).toBe(5);
  });

  it("a denied composite restates members that would have allowed", () => {
    const parts = [decision(true, 3, 1, 0, 10), decision(false, 2, 0, 50, 60)];
    const restated = unconsumed(parts, () => decision(true, 3, 2, 0, 5));
    expect(restated).toEqual([decision(true, 3, 2, 0, 5), parts[1]]);
  });

  for (const start of [0, 1_800_000_000_000]) {
    it(`a tie through a limiter: members with equal remaining report the first one's limit (at ${start})`, () => {
      // fixed-window limit 3 and sliding-log limit 4 over 10 s: after one request in each of two
      // fixed windows, both have 2 left.
      const run = (first: "fixed" | "log"): Decision => {
        const clock = new ManualClock(start);
        const fixed = { algorithm: "fixed-window" as const, limit: 3, windowMs: 1000 };
        const log = { algorithm: "sliding-log" as const, limit: 4, windowMs: 10_000 };
        const limiter = createLimiter(first === "fixed" ? [fixed, log] : [log, fixed], clock);
        limiter.tryAcquire("k");
        clock.set(start + 1000);
        return limiter.tryAcquire("k");
      };
      expect(run("fixed")).toMatchObject({ allowed: true, remaining: 2, limit: 3 });
      expect(run("log")).toMatchObject({ allowed: true, remaining: 2, limit: 4 });
    });
  }
});

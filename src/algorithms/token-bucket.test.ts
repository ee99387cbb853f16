// token-bucket against docs/semantics.md §5: balance in thousandths of a token, starting full;
// balance = min(capacity·1000, balance + elapsed·refillPerSecond), elapsed = max(0, now −
// updatedAt); allowed iff balance ≥ cost·1000; remaining = floor(balance / 1000);
// retryAfterMs = ceil((cost·1000 − balance) / rate); resetMs = ceil((capacity·1000 − balance) / rate).
import { createLimiter, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { checkRetryHonest, runTable } from "./test-support/table.ts";
import { tokenBucket } from "./token-bucket.ts";

const INF = Number.POSITIVE_INFINITY;

describe("token-bucket", () => {
  it("spends and refills in thousandths; retryAfterMs and resetMs from the deficit", () => {
    const clock = new ManualClock();
    // 2 tokens/s = 2 thousandths per ms
    const limiter = createLimiter({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 2 }, clock);
    runTable(limiter, clock, 5, [
      [0, "a", 5, true, 0, 0, 2500], // starts full: 5000 − 5000; reset 5000/2
      [0, "a", 1, false, 0, 500, 2500], // deficit 1000 / 2
      [499, "a", 1, false, 0, 1, 2001], // balance 998: ceil(2/2), ceil(4002/2)
      [500, "a", 1, true, 0, 0, 2500],
      [1250, "a", 2, false, 1, 250, 1750], // balance 1500
      [1250, "a", 6, false, 1, INF, 1750], // cost > capacity
      [1500, "a", 1, true, 1, 0, 2000], // balance 2000 → 1000
      // The clock steps back to 1000: no time passed (balance 1000 as of 1500), no refill.
      [1000, "a", 1, true, 0, 0, 2500],
      // Denied at 1000 with balance 0: the formula's 1000/2 = 500 would send the client back at
      // 1500, where still no time has passed since 1500; the honest answer is 1000.
      [1000, "a", 1, false, 0, 1000, 2500],
      [2000, "a", 1, true, 0, 0, 2500],
      [2000, "b", 5, true, 0, 0, 2500],
      [10_000, "a", 5, true, 0, 0, 2500], // long idle: capped at capacity, not more
      [10_000, "a", 1, false, 0, 500, 2500],
    ]);
  });

  it("retryAfterMs is exact for integer rates: at it the request passes, 1 ms earlier not", () => {
    const clock = new ManualClock(1_760_000_000_000);
    const limiter = createLimiter({ algorithm: "token-bucket", capacity: 10, refillPerSecond: 3 }, clock);
    limiter.tryAcquire("k", 10);
    clock.advance(7); // balance 21 thousandths
    for (const cost of [1, 4, 10]) {
      expect(limiter.peek("k", cost).retryAfterMs).toBe(Math.ceil((cost * 1000 - 21) / 3));
      checkRetryHonest(limiter, clock, "k", cost);
    }
  });

  it("fractional and tiny rates, over years", () => {
    const clock = new ManualClock();
    const half = createLimiter({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 0.5 }, clock);
    runTable(half, clock, 1, [
      [0, "k", 1, true, 0, 0, 2000],
      [1999, "k", 1, false, 0, 1, 1], // 999.5 thousandths: ceil(0.5 / 0.5)
      [2000, "k", 1, true, 0, 0, 2000],
    ]);
    // One token per 10^6 s (≈ 11.6 days): 10^-6 thousandths per ms, 10^9 ms per token.
    const tiny = createLimiter({ algorithm: "token-bucket", capacity: 2, refillPerSecond: 1e-6 }, clock);
    runTable(tiny, clock, 2, [
      [0, "k", 2, true, 0, 0, 2_000_000_000],
      [0, "k", 1, false, 0, 1_000_000_000, 2_000_000_000],
      [999_999_000, "k", 1, false, 0, 1000, 1_000_001_000],
      [1_000_000_000, "k", 1, true, 0, 0, 2_000_000_000],
    ]);
    // Below 10^-6 tokens/s a float tolerance must still stay within 1 ms of refill.
    const slower = createLimiter({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 1e-9 }, clock);
    clock.set(0);
    expect(slower.tryAcquire("k").allowed).toBe(true);
    clock.set(1e12 - 100); // exact arithmetic: one token at 10^12 ms
    expect(slower.peek("k")).toMatchObject({ allowed: false, remaining: 0 });
    expect(slower.peek("k").retryAfterMs).toBeGreaterThanOrEqual(99);
    expect(slower.peek("k").retryAfterMs).toBeLessThanOrEqual(100);
    clock.set(1e12);
    expect(slower.peek("k")).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("the step: a denial and a peek leave the state record as it was", () => {
    const step = tokenBucket({ algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 });
    const state = step.create();
    step.step(state, 100, 3, true);
    const snapshot = { ...state };
    expect(step.step(state, 600, 1, true)).toMatchObject({ allowed: false, retryAfterMs: 500, remaining: 0 });
    expect(step.step(state, 5000, 3, false)).toMatchObject({ allowed: true, remaining: 0, resetMs: 3000 });
    expect(state).toEqual(snapshot);
  });
});

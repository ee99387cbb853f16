// fixed-window against docs/semantics.md §5: s = floor(now / W)·W; allowed iff c + cost ≤ limit;
// retryAfterMs = s + W − now; remaining = limit − c; resetMs = c > 0 ? s + W − now : 0.

import { createLimiter, type Decision, ManualClock, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { fixedWindow } from "./fixed-window.ts";
import { checkRetryHonest, type Row, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;

describe("fixed-window", () => {
  it("counts per aligned window, edges, weighted cost, cost > limit, clock stepping back", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 3, windowMs: 1000 }, clock);
    const rows: Row[] = [
      [0, "a", 1, true, 2, 0, 1000],
      [500, "a", 2, true, 0, 0, 500],
      [999, "a", 1, false, 0, 1, 1], // last ms of the window
      [999, "b", 1, true, 2, 0, 1], // keys are independent
      [1000, "a", 1, true, 2, 0, 1000], // first ms of the next window
      [1000, "a", 5, false, 2, INF, 1000], // cost > limit: never, and nothing consumed
      [1999, "a", 3, false, 2, 1, 1],
      [1999, "a", 2, true, 0, 0, 1],
      [2000, "a", 3, true, 0, 0, 1000],
      // The clock steps back into window 1000: no time passed, window 2000 and its count stay.
      [1500, "a", 1, false, 0, 1500, 1500],
      [1500, "c", 1, true, 2, 0, 500], // a fresh key at 1500 is in window 1000
      [3000, "a", 1, true, 2, 0, 1000],
      [2999, "a", 2, true, 0, 0, 1001], // stepped back again: still window 3000, count 3
    ];
    runTable(limiter, clock, 3, rows);
  });

  it("a denied client returning at retryAfterMs passes, 1 ms earlier it does not", () => {
    const clock = new ManualClock(12_345);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 700 }, clock);
    limiter.tryAcquire("k", 2);
    checkRetryHonest(limiter, clock, "k", 1);
    checkRetryHonest(limiter, clock, "k", 2);
    // 12_345 is in window [11_900, 12_600): 255 ms to go.
    expect(limiter.peek("k").retryAfterMs).toBe(255);
  });

  it("windows of ten years at epoch-ms instants", () => {
    const W = 10 * 365 * 86_400_000;
    const now = 1_760_000_000_000; // window 5: [1_576_800_000_000, 1_892_160_000_000)
    const clock = new ManualClock(now);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: W }, clock);
    runTable(limiter, clock, 2, [
      [now, "k", 2, true, 0, 0, 132_160_000_000],
      [now + 1, "k", 1, false, 0, 132_159_999_999, 132_159_999_999],
      [1_892_160_000_000, "k", 1, true, 1, 0, W],
    ]);
  });

  it("peek with a fresh key says full and changes nothing", () => {
    const clock = new ManualClock(250);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 4, windowMs: 1000 }, clock);
    expect(limiter.peek("k", 4)).toEqual({
      allowed: true,
      limit: 4,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 750,
      delayMs: 0,
    } satisfies Decision);
    expect(limiter.tryAcquire("k", 4).allowed).toBe(true);
  });

  it("the step: denial and peek leave the state record as it was", () => {
    const step = fixedWindow({ algorithm: "fixed-window", limit: 2, windowMs: 100 });
    const state = step.create();
    expect(step.step(state, 150, 2, true).allowed).toBe(true);
    const snapshot = { ...state };
    expect(step.step(state, 160, 1, true)).toMatchObject({ allowed: false, retryAfterMs: 40, resetMs: 40 });
    expect(step.step(state, 260, 1, false)).toMatchObject({ allowed: true, remaining: 1, resetMs: 40 });
    expect(state).toEqual(snapshot);
  });

  it("a composite reports an unconsumed fresh fixed-window member with resetMs 0", () => {
    const clock = new ManualClock(100);
    const limiter = createLimiter(
      [
        { algorithm: "fixed-window", limit: 5, windowMs: 100 },
        { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
      ],
      clock,
    );
    expect(limiter.tryAcquire("k").allowed).toBe(true);
    clock.set(250); // window 200: the fixed-window count for k is 0 again; the bucket is not refilled
    const d = limiter.tryAcquire("k") as Decision;
    expect(d.allowed).toBe(false);
    expect(d.parts?.[0]).toEqual({ allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetMs: 0, delayMs: 0 });
    expect(d.resetMs).toBe(850); // the bucket's: (1000 − 150)/1 thousandth per ms
  });

  it("a count kept from a larger limit never reports negative remaining", () => {
    const clock = new ManualClock(0);
    const service = new RateLimiterService(clock);
    service.addRule("r", { algorithm: "fixed-window", limit: 10, windowMs: 1000 });
    for (let i = 0; i < 8; i++) service.check("r", "k");
    service.updateRule("r", { algorithm: "fixed-window", limit: 5, windowMs: 1000 });
    expect(service.check("r", "k")).toEqual({
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 1000,
      delayMs: 0,
    });
  });
});

// sliding-log against docs/semantics.md §5: entries with t ≤ now − W no longer count; allowed iff
// n + cost ≤ limit; when denied retryAfterMs = e + W − now, e the (n + cost − limit)-th oldest;
// resetMs = newest + W − now (0 for an empty log); denied requests are never logged.

import { createLimiter, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { slidingLog } from "./sliding-log.ts";
import { checkRetryHonest, type Row, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;

describe("sliding-log", () => {
  it("a request exactly one window old is gone; 1 ms younger it still counts", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 1000 }, clock);
    const rows: Row[] = [
      [0, "a", 1, true, 2, 0, 1000],
      [100, "a", 1, true, 1, 0, 1000],
      [200, "a", 1, true, 0, 0, 1000],
      [300, "a", 1, false, 0, 700, 900], // e = oldest (0)
      [300, "a", 2, false, 0, 800, 900], // e = 2nd oldest (100)
      [999, "a", 1, false, 0, 1, 201], // the entry at 0 is 999 ms old: still counts
      [1000, "a", 1, true, 0, 0, 1000], // exactly one window old: gone
      [1000, "a", 4, false, 0, INF, 1000], // cost > limit
      [1099, "a", 1, false, 0, 1, 901],
      [1100, "a", 1, true, 0, 0, 1000],
      [1100, "b", 3, true, 0, 0, 1000],
      // The clock steps back to 500: no time passed (it reads as the newest entry, 1100).
      [500, "a", 1, false, 0, 700, 1600], // e = 200; at 1200 it is gone
      [3000, "a", 3, true, 0, 0, 1000],
    ];
    runTable(limiter, clock, 3, rows);
  });

  it("weighted cost: retryAfterMs points at the entry whose expiry makes room", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 5, windowMs: 1000 }, clock);
    runTable(limiter, clock, 5, [
      [0, "k", 3, true, 2, 0, 1000],
      [10, "k", 3, false, 2, 990, 990], // needs 1 entry gone: the oldest, at 0
      [10, "k", 2, true, 0, 0, 1000],
      [500, "k", 4, false, 0, 510, 510], // log 0,0,0,10,10: the 4th oldest is at 10
    ]);
    clock.set(500);
    expect(limiter.peek("k", 3).retryAfterMs).toBe(500); // the 3rd oldest is at 0
    // Checked in this order: a peek at a later instant drops the entries expired by then, and
    // a clock stepped back afterwards reads as "no time passed" since that later instant.
    checkRetryHonest(limiter, clock, "k", 3);
    checkRetryHonest(limiter, clock, "k", 4);
  });

  it("the seed's two pings per second, and a ten-year window", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ type: "sliding", limit: 2, windowMs: 1000 }, clock);
    runTable(limiter, clock, 2, [
      [0, "user", 1, true, 1, 0, 1000],
      [500, "user", 1, true, 0, 0, 1000],
      [999, "user", 1, false, 0, 1, 501],
      [1000, "user", 1, true, 0, 0, 1000],
      [1499, "user", 1, false, 0, 1, 501],
      [1500, "user", 1, true, 0, 0, 1000],
    ]);
    const W = 10 * 365 * 86_400_000;
    const t0 = 1_760_000_000_000;
    const years = createLimiter({ algorithm: "sliding-log", limit: 1, windowMs: W }, clock);
    runTable(years, clock, 1, [
      [t0, "k", 1, true, 0, 0, W],
      [t0 + W - 1, "k", 1, false, 0, 1, 1],
      [t0 + W, "k", 1, true, 0, 0, W],
    ]);
  });

  it("the step keeps at most limit entries and never logs a denial", () => {
    const step = slidingLog({ algorithm: "sliding-log", limit: 4, windowMs: 100 });
    const state = step.create();
    for (let t = 0; t < 1000; t += 10) step.step(state, t, 1 + (t % 3), true);
    expect(state.n).toBeLessThanOrEqual(4);
    expect(state.buf.length).toBeLessThanOrEqual(4);
    const n = state.n;
    expect(step.step(state, 990, 4, true).allowed).toBe(false);
    expect(state.n).toBe(n);
  });
});

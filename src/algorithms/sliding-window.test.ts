// sliding-window against docs/semantics.md §5, every figure from the integer formula:
// allowed iff prev·(W − el) + (cur + cost)·W ≤ limit·W; remaining = max(0, floor((L·W −
// prev·(W − el) − cur·W) / W)); retryAfterMs = first whole ms the inequality holds, state
// unchanged; resetMs = cur > 0 ? s + 2W − now : prev > 0 ? s + W − now : 0.

import { createLimiter, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { slidingWindow } from "./sliding-window.ts";
import { checkRetryHonest, type Row, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;

describe("sliding-window", () => {
  it("weights the previous window by its overlap", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "sliding-window", limit: 10, windowMs: 1000 }, clock);
    const rows: Row[] = [
      [0, "a", 4, true, 6, 0, 2000], // 0 + 4·1000 ≤ 10000
      [500, "a", 6, true, 0, 0, 1500], // 10·1000 ≤ 10000
      // 11000 > 10000; next window: 10·(1000 − el) + 1000 ≤ 10000 ⇔ el ≥ 100 → 1100
      [600, "a", 1, false, 0, 500, 1400],
      [1099, "a", 1, false, 0, 1, 901], // prev 10: 10·901 + 1000 = 10010; cur 0: resetMs s + W − now
      [1100, "a", 1, true, 0, 0, 1900], // 10·900 + 1000 = 10000; remaining (10000−9000−1000)/1000
      // 10·750 + 3·1000 = 10500 > 10000; room 7: 10·(1000 − el) ≤ 7000 ⇔ el ≥ 300 → 1300
      [1250, "a", 2, false, 1, 50, 1750], // remaining floor((10000 − 7500 − 1000)/1000) = 1
      [1250, "a", 1, true, 0, 0, 1750], // 7500 + 2000 = 9500
      [1250, "a", 11, false, 0, INF, 1750], // cost > limit
      [2999, "a", 1, true, 8, 0, 1001], // prev 2 (window 1000): 2·1 + 1000 = 1002
      [2999, "a", 11, false, 8, INF, 1001], // remaining floor((10000 − 2 − 1000)/1000) = 8
      [5000, "a", 10, true, 0, 0, 2000], // windows 3000/4000 empty: both counts 0
      // prev 10 only (cur 0): resetMs = s + W − now; 10·1000 + 1000 > 10000; room 9 → el ≥ 100
      [6000, "a", 1, false, 0, 100, 1000],
      [6100, "a", 1, true, 0, 0, 1900],
      // Clock back into window 5000: the stored window 6000 stays and el reads as 0 (never < 0).
      // 10·1000 + 2·1000 > 10000; room 8: el ≥ 1000 − 800 → 6200; cur 1: resetMs 8000 − 5500
      [5500, "a", 1, false, 0, 700, 2500],
    ];
    runTable(limiter, clock, 10, rows);
  });

  it("retryAfterMs is the first whole ms that passes, within this window or the next", () => {
    const clock = new ManualClock();
    const limiter = createLimiter({ algorithm: "sliding-window", limit: 7, windowMs: 300 }, clock);
    limiter.tryAcquire("k", 5); // window 0: cur 5
    clock.set(310);
    limiter.tryAcquire("k", 2); // window 300: prev 5·290 + 2·300 = 2050 ≤ 2100
    clock.set(320); // 5·280 + 3·300 = 2300 > 2100; room 7 − 2 − 1 = 4: 5·(300 − el) ≤ 1200 ⇔ el ≥ 60
    expect(limiter.peek("k")).toMatchObject({ allowed: false, retryAfterMs: 40, remaining: 0, resetMs: 580 });
    checkRetryHonest(limiter, clock, "k", 1);
    // cost 5: room 0 → not in this window; next window: 2·(300 − el) + 5·300 ≤ 2100 ⇔ el ≥ 0 → 600
    expect(limiter.peek("k", 5).retryAfterMs).toBe(280);
    checkRetryHonest(limiter, clock, "k", 5);
    // cost 7: next window needs 2·(300 − el) ≤ 0 ⇔ el = 300: the window after, 900
    expect(limiter.peek("k", 7).retryAfterMs).toBe(580);
    checkRetryHonest(limiter, clock, "k", 7);
  });

  it("integer comparison at a ten-year window and at the 2^51 product bound", () => {
    const W = 10 * 365 * 86_400_000;
    const s = 1_576_800_000_000;
    const clock = new ManualClock(s + W - 1);
    const limiter = createLimiter({ algorithm: "sliding-window", limit: 3, windowMs: W }, clock);
    runTable(limiter, clock, 3, [
      [s + W - 1, "k", 3, true, 0, 0, W + 1],
      // next window, el = 1: 3·(W − 1) + W > 3W; room 2: 3·(W − el) ≤ 2W ⇔ el ≥ W − floor(2W/3)
      // = 105_120_000_000; cur 0, prev 3: resetMs = s' + W − now = W − 1
      [s + W + 1, "k", 1, false, 0, 105_119_999_999, W - 1],
      [s + W + 105_120_000_000, "k", 1, true, 0, 0, 2 * W - 105_120_000_000],
    ]);
    const big = slidingWindow({ algorithm: "sliding-window", limit: 2 ** 21, windowMs: 2 ** 30 });
    const state = big.create();
    expect(big.step(state, 0, 2 ** 21, true)).toMatchObject({ allowed: true, remaining: 0 });
    // one ms into the next window: prev·(W − 1) + W ≤ L·W ⇔ W ≤ prev — false, exactly
    expect(big.step(state, 2 ** 30 + 1, 1, false)).toMatchObject({ allowed: false, remaining: 0 });
    // el = 2^10: 2^21·(2^30 − 2^10) + 2^30 = 2^51 − 2^30 ≤ 2^51; remaining floor(2^30 / 2^30) = 1
    expect(big.step(state, 2 ** 30 + 1024, 1, false)).toMatchObject({ allowed: true, remaining: 1 });
  });
});

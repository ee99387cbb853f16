import { ManualClock, systemClock } from "sluice";
import { describe, expect, it } from "vitest";
import { sleep } from "./clock.ts";

describe("clocks", () => {
  it("ManualClock moves only when told to, both ways", () => {
    const clock = new ManualClock();
    expect(clock.now()).toBe(0);
    expect(clock.set(1500).now()).toBe(1500);
    expect(clock.advance(500).now()).toBe(2000);
    expect(clock.set(100).now()).toBe(100);
    expect(new ManualClock(42).now()).toBe(42);
    expect(() => clock.set(Number.NaN)).toThrow(/finite/);
  });

  it("systemClock is epoch milliseconds, integer, and never runs backwards", () => {
    let last = systemClock.now();
    expect(Number.isInteger(last)).toBe(true);
    expect(Math.abs(last - Date.now())).toBeLessThan(60_000);
    for (let i = 0; i < 100_000; i++) {
      const now = systemClock.now();
      expect(now >= last).toBe(true);
      last = now;
    }
  });

  it("sleep on a ManualClock fires when the clock reaches the deadline, even past 2^31 ms", async () => {
    const clock = new ManualClock(0);
    let fired = false;
    const done = sleep(clock, 2 ** 33).then(() => {
      fired = true;
    });
    clock.set(2 ** 33 - 1);
    await Promise.resolve();
    expect(fired).toBe(false);
    clock.set(2 ** 33);
    await done;
    expect(fired).toBe(true);
  });
});

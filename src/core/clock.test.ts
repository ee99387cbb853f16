import { type Clock, ManualClock, systemClock } from "sluice";
import { describe, expect, it, vi } from "vitest";
import { after as afterMs, sleep } from "./clock.ts";

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

  it("after() measures its wait on systemClock's monotonic source, not performance.now()", async () => {
    // A performance.now() that stands still: a wait measured on it would never end.
    const frozen = vi.spyOn(performance, "now").mockReturnValue(performance.now());
    try {
      const started = systemClock.now();
      const fired = await new Promise<number | undefined>((resolve) => {
        const giveUp = setTimeout(() => resolve(undefined), 5_000);
        afterMs(systemClock, 30, () => {
          clearTimeout(giveUp);
          resolve(systemClock.now());
        });
      });
      expect(fired).toBeDefined();
      // Never early by the clock decisions read (timers may be late under load, never early).
      expect((fired as number) - started).toBeGreaterThanOrEqual(30);
    } finally {
      frozen.mockRestore();
    }
  });

  it("after() measures a user's clock by that clock: it never fires while that clock stands still", async () => {
    // A clock of the user's own (here one that stands still, as a faked Date does until the test
    // moves it): the wait ends when that clock has moved `ms`, whatever the machine's time does.
    let t = 1_800_000_000_000;
    const own: Clock = { now: () => t };
    let fired = false;
    const cancel = afterMs(own, 30, () => {
      fired = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(fired).toBe(false);
    t += 30;
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (fired) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    expect(fired).toBe(true);
    cancel();
  });

  it("after() never fires inside its own call, even at or past its deadline", async () => {
    for (const ms of [0, -5, 1]) {
      let fired = 0;
      const cancel = afterMs(systemClock, ms, () => fired++);
      // Past a 1 ms deadline before the call returns to the caller: still not fired in the call.
      const spinUntil = systemClock.now() + 3;
      while (systemClock.now() < spinUntil) {}
      expect(fired).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fired).toBe(1);
      cancel();
    }
    let cancelled = 0;
    afterMs(systemClock, 0, () => cancelled++)();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(cancelled).toBe(0);
  });
});

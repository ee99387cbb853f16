// A late start whose move to its real start is refused waits for the next unit, but never past
// its job's `maxWaitMs`: its task has not begun, so it is rejected with a WaitTimeoutError as a
// waiting job would be, and its slot goes back (attack8 F5: on a loaded process such starts
// waited seconds past `maxWaitMs`).
import { createLimiter, createThrottle, ManualClock, MemoryStore, WaitTimeoutError } from "sluice";
import { describe, expect, it } from "vitest";
import { LATE_START_MS } from "./runner.ts";

const T0 = Date.UTC(2026, 11, 7);
const RATE = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe("a late start refused at its real start", () => {
  for (const [maxWaitMs, expected] of [
    [300, "expired"],
    [5_000, "done"],
  ] as const) {
    it(`maxWaitMs ${maxWaitMs}: ${expected}`, async () => {
      const clock = new ManualClock(T0 + 990);
      const store = new MemoryStore();
      const throttle = createThrottle({ name: "mw", store, clock, rate: RATE, concurrency: 1 });
      const other = createLimiter(RATE, { store, clock, name: "throttle:mw" });
      let stalled = false;
      throttle.on("start", () => {
        if (stalled) return;
        stalled = true;
        clock.advance(LATE_START_MS + 10); // into the next window, which another client fills
        expect(other.tryAcquire("default", 2).allowed).toBe(true);
      });
      let ran = 0;
      const outcome = throttle
        .schedule(() => void ran++, { maxWaitMs })
        .then(
          () => "done",
          (e: unknown) => (e instanceof WaitTimeoutError ? "expired" : String(e)),
        );
      await settle();
      if (expected === "expired") {
        // Rejected at once: the next unit is a window away, past its maxWaitMs.
        expect(await outcome).toBe("expired");
        expect(ran).toBe(0);
        expect(throttle.stats()).toMatchObject({ running: 0, expired: 1 });
        // Its slot came back: another job runs.
        clock.advance(1000);
        await throttle.schedule(() => void ran++);
        expect(ran).toBe(1);
      } else {
        clock.advance(1000);
        await settle();
        expect(await outcome).toBe("done");
        expect(ran).toBe(1);
      }
      await throttle.close();
    });
  }
});

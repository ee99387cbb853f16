// A job whose late start is moved twice (its moved unit's own start comes late again: here a
// leaky bucket's spacing timer that fires well after its due instant) gives back the units of
// its FIRST move at the second, not its grant's again: the grant's were already given back, so
// refunding that receipt again freed nothing and the first move's units stayed held beside the
// second's (a sliding log kept two entries for one start; each further move cost the rate a
// unit: a busy process on a shared store ran at a fraction of its rate, attack8 F1).
import { createLimiter, createThrottle, type LimitSpec, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { LATE_START_MS } from "./runner.ts";

const T0 = Date.UTC(2026, 11, 7, 12);
const RATE = [
  { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 },
  { algorithm: "sliding-log", limit: 3, windowMs: 10_000 },
] as const satisfies LimitSpec[];

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe("a late start moved twice", () => {
  it("holds one log entry for its one start, not one per move", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const throttle = createThrottle({ name: "moves", store, clock, rate: RATE });
    const other = createLimiter(RATE, { store, clock, name: "throttle:moves" });
    const starts: number[] = [];
    let stalled = false;
    throttle.on("start", () => {
      if (stalled) return;
      stalled = true;
      // A stall between the grant and the task, and meanwhile another client's request: the
      // moved unit then waits the leaky bucket's spacing.
      clock.advance(LATE_START_MS + 10);
      expect(other.tryAcquire("default").allowed).toBe(true);
    });
    const done = throttle.schedule(() => {
      starts.push(clock.now());
    });
    await settle();
    expect(starts).toEqual([]); // moved, waiting the spacing of the other client's request (200 ms)
    // The spacing's timer fires late: the task would start LATE_START_MS + 30 after it was due.
    clock.advance(200 + LATE_START_MS + 30);
    await settle();
    await done;
    expect(starts).toHaveLength(1);
    // The log holds the other client's entry and this job's one: a third still fits.
    const peek = other.peek("default");
    expect(peek.parts?.[1]).toMatchObject({ allowed: true, remaining: 0 });
    await throttle.close();
  });
});

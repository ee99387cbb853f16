// A task that starts more than LATE_START_MS after its grant was due (a stall: here a `start`
// listener that moves the ManualClock) has its rate unit moved to its real start first, so the
// rate holds on the tasks' own start instants (issue 32; attack finding 5). Its unit, refused at
// the real start (a window that filled meanwhile), is the next one that frees: the job holds its
// turn, and its task runs once.
import { createLimiter, createThrottle, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { LATE_START_MS } from "./runner.ts";

/** A window boundary: fixed windows of 1000 ms start at multiples of 1000. */
const T0 = Date.UTC(2026, 11, 7);
const RATE = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup() {
  const clock = new ManualClock(T0 + 990);
  const store = new MemoryStore();
  const throttle = createThrottle({ name: "late", store, clock, rate: RATE });
  const starts: Array<[string, number]> = [];
  const job = (name: string) => () => {
    starts.push([name, clock.now()]);
  };
  /** Starts per fixed window, by the tasks' own start instants. */
  const perWindow = () => {
    const counts = new Map<number, number>();
    for (const [, at] of starts) counts.set(Math.floor(at / 1000), (counts.get(Math.floor(at / 1000)) ?? 0) + 1);
    return Math.max(...counts.values());
  };
  return { clock, store, throttle, starts, job, perWindow };
}

describe("a late start takes its rate unit at its real start", () => {
  it("a stall past a window's end: at most `limit` starts in each window, by the starts", async () => {
    const { clock, throttle, starts, job, perWindow } = setup();
    let stalled = false;
    throttle.on("start", () => {
      if (stalled) return;
      stalled = true;
      clock.advance(LATE_START_MS + 10); // into the next window, between the grant and the task
    });
    const done = [0, 1, 2, 3].map((i) => throttle.schedule(job(`j${i}`)));
    await settle();
    expect(starts.map(([n]) => n)).toEqual(["j0", "j1"]);
    clock.advance(1000);
    await settle();
    await Promise.all(done);
    expect(starts.map(([n]) => n)).toEqual(["j0", "j1", "j2", "j3"]);
    expect(perWindow()).toBeLessThanOrEqual(2);
    await throttle.close();
  });

  it("refused at its real start, it runs once, on the next unit that frees, ahead of later jobs", async () => {
    const { clock, store, throttle, starts, job, perWindow } = setup();
    const other = createLimiter(RATE, { store, clock, name: "throttle:late" });
    let stalled = false;
    throttle.on("start", () => {
      if (stalled) return;
      stalled = true;
      clock.advance(LATE_START_MS + 10);
      // Meanwhile the next window filled (another client of the same records).
      expect(other.tryAcquire("default", 2).allowed).toBe(true);
    });
    const done = [0, 1].map((i) => throttle.schedule(job(`j${i}`)));
    await settle();
    expect(starts).toEqual([]);
    clock.advance(1000);
    await settle();
    await Promise.all(done);
    expect(starts.map(([n]) => n)).toEqual(["j0", "j1"]);
    expect(perWindow()).toBeLessThanOrEqual(2);
    expect(throttle.stats()).toMatchObject({ done: 2, failed: 0, running: 0 });
    await throttle.close();
  });
});

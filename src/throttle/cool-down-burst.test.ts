// A throttle deciding its own starts (MemoryStore) after a cool-down: the burst its rate refilled
// during the pause and the cool-down does not survive them (coolDownEnd's rule, as the fleet
// queues: chargeCoolDownBurst). ManualClock tables at fixed instants.
import { createThrottle, ManualClock } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 7);
/** 10 a second with its full burst of 10: a spacing of 100 ms once the burst is spent. */
const RATE = { algorithm: "gcra", limit: 10, periodMs: 1000 } as const;

/** Lets every pending promise callback run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup() {
  const clock = new ManualClock(T0);
  const throttle = createThrottle({ rate: RATE, clock });
  const started: string[] = [];
  const ends: Array<() => void> = [];
  const job = (name: string) => () =>
    new Promise<void>((resolve) => {
      started.push(name);
      ends.push(resolve);
    });
  /** Moves the clock to T0 + `ms` and returns what has started by then. */
  const at = async (ms: number) => {
    clock.set(T0 + ms);
    await settle();
    return started.join("");
  };
  return { clock, throttle, started, ends, job, at };
}

describe("createThrottle (local queue): no burst after a cool-down", () => {
  it("jobs waiting at the cool-down's end: one at the end, then one a rate spacing", async () => {
    const { throttle, ends, job, at } = setup();
    await throttle.pause("default", 200); // paused until T0 + 200, cooling down until T0 + 400
    for (const name of "abcdefg") throttle.schedule(job(name)).catch(() => {});
    // [instant after T0, started by then]; before, "bcdefg" all went at T0 + 400.
    const table: Array<[number, string]> = [
      [199, ""],
      [200, "a"], // the cool-down's one job (it runs on past the cool-down's end)
      [399, "a"],
      [400, "ab"], // the end: one unit left
      [499, "ab"],
      [500, "abc"], // then the rate's steady spacing
      [600, "abcd"],
      [700, "abcde"],
    ];
    for (const [ms, want] of table) expect([ms, await at(ms)]).toEqual([ms, want]);
    const closing = throttle.close();
    for (const end of ends) end();
    await closing;
  });

  it.each([
    // [when the jobs arrive (after T0), started then, 99 ms later, 100 ms later]
    [600, "xa", "xa", "xab"], // 200 ms after the end: charged then, one job, the next 100 ms later
    [1400, "xabcdef", "xabcdef", "xabcdef"], // a rate period after it: the rate refilled at its pace since
  ])("a key idle at the cool-down's end, jobs at T0 + %i: %s, then %s, %s", async (arrive, now, next, spaced) => {
    const { throttle, ends, job, at } = setup();
    await throttle.pause("default", 200); // cooling down until T0 + 400
    throttle.schedule(job("x")).catch(() => {}); // the cool-down's one job, ended during it
    expect(await at(200)).toBe("x");
    ends[0]?.();
    await at(arrive);
    for (const name of "abcdef") throttle.schedule(job(name)).catch(() => {});
    expect(await at(arrive)).toBe(now);
    expect(await at(arrive + 99)).toBe(next);
    expect(await at(arrive + 100)).toBe(spaced);
    const closing = throttle.close();
    for (const end of ends) end();
    await closing;
  });
});

// A late start during a pause waits for its end (its task has not begun), as on the fleet queues.
// A late start refused during a cool-down (another job of the cool-down runs) is woken when that
// job ends, not by polling: one wake-up, the job's end, where it asked again every 50 ms before
// (50 ms then); a bounded fallback (COOL_FALLBACK_MS, or the cool-down's end) stays armed.
// ManualClock at fixed instants, its timer firings counted.
import { createLimiter, createThrottle, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 7);
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A ManualClock counting the waits it fires. */
class CountingClock extends ManualClock {
  fired = 0;
  override schedule(ms: number, fire: () => void): () => void {
    return super.schedule(ms, () => {
      this.fired++;
      fire();
    });
  }
}

describe("a late start refused during a cool-down", () => {
  it("is woken by the end of the cool-down's job, with no wake-up before it", async () => {
    const clock = new CountingClock(T0);
    const store = new MemoryStore();
    const rate = { algorithm: "gcra", limit: 1, periodMs: 1000 } as const;
    const throttle = createThrottle({ name: "cw", rate, clock, store });
    // Another client of the same records: it takes and gives back units to shape the waits.
    const other = createLimiter(rate, { store, clock, name: "throttle:cw" });
    const started: Array<[string, number]> = [];
    const ends = new Map<string, () => void>();
    const job = (name: string) => () =>
      new Promise<void>((resolve) => {
        started.push([name, clock.now() - T0]);
        ends.set(name, resolve);
      });
    let stalled = false;
    throttle.on("start", () => {
      if (stalled) return;
      stalled = true;
      // b's start stalls 30 ms, and meanwhile the other client takes the next unit: b's task, late,
      // asks for a unit at its real start and is refused until T0 + 1030.
      clock.set(T0 + 30);
      other.penalty("default", 1);
    });
    const b = throttle.schedule(job("b"));
    await settle();
    expect(started).toEqual([]);
    // A pause (until T0 + 630, cooling down until T0 + 1230); the other client's unit comes back,
    // so "a" starts at the pause's end: the cool-down's job.
    await throttle.pause("default", 600);
    other.refund("default", 1);
    throttle.schedule(job("a")).catch(() => {});
    clock.set(T0 + 630);
    await settle();
    expect(started).toEqual([["a", 630]]);
    // b asks again at T0 + 1030, during the cool-down, while a runs: it waits for a's end.
    clock.set(T0 + 1030);
    await settle();
    const fired = clock.fired;
    for (let ms = 1040; ms <= 1200; ms += 10) {
      clock.set(T0 + ms);
      await settle();
    }
    expect(clock.fired - fired).toBe(0); // before: a wake-up every 50 ms (3 by T0 + 1200)
    expect(started).toEqual([["a", 630]]);
    clock.set(T0 + 1205);
    other.refund("default", 1); // room for b (a's unit given back by the other client)
    ends.get("a")?.();
    await settle();
    // Woken by a's end (before: at the next poll, T0 + 1230).
    expect(started).toEqual([
      ["a", 630],
      ["b", 1205],
    ]);
    ends.get("b")?.();
    await b;
    await throttle.close();
  });
});

describe("a late start during a pause", () => {
  it("waits for the pause's end, as on the fleet queues (its task has not begun)", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ rate: { algorithm: "gcra", limit: 100, periodMs: 1000 }, clock });
    const started: Array<[string, number]> = [];
    let stalled = false;
    throttle.on("start", () => {
      if (stalled) return;
      stalled = true;
      // b's start stalls 30 ms, and meanwhile a 429 pauses the key for 500 ms.
      void throttle.pause("default", 500);
      clock.set(T0 + 30);
    });
    const b = throttle.schedule(() => {
      started.push(["b", clock.now() - T0]);
    });
    await settle();
    expect(started).toEqual([]); // before: b ran at T0 + 30, during the pause
    // The pause ends at T0 + 500 here; the key's block in the store, laid once the clock read
    // T0 + 30, at T0 + 530: b goes then.
    clock.set(T0 + 529);
    await settle();
    expect(started).toEqual([]);
    clock.set(T0 + 530);
    await settle();
    expect(started).toEqual([["b", 530]]);
    await b;
    await throttle.close();
  });
});

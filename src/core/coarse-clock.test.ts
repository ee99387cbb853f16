// coarseClock's staleness bound, checked on the real system clock with no timing assertion: a
// synchronous busy wait moves the system clock by a known amount while the coarse clock must not
// move (same turn, under maxReads), and must have moved once the turn ends or maxReads is spent.
import { ArgumentError, coarseClock, createLimiter, systemClock } from "sluice";
import { describe, expect, it } from "vitest";

/** Spins until the system clock has moved `ms` past `from`. */
function busyUntil(from: number, ms: number): number {
  let t = systemClock.now();
  while (t < from + ms) t = systemClock.now();
  return t;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("coarseClock", () => {
  it("answers one reading for the rest of the turn", () => {
    const clock = coarseClock();
    const first = clock.now();
    const later = busyUntil(first, 5);
    for (let i = 0; i < 100; i++) expect(clock.now()).toBe(first);
    expect(later).toBeGreaterThanOrEqual(first + 5);
  });

  it("reads the system clock again once the turn has ended", async () => {
    const clock = coarseClock();
    const first = clock.now();
    const moved = busyUntil(first, 5);
    await nextTurn();
    const next = clock.now();
    expect(next).toBeGreaterThanOrEqual(moved);
    expect(next).toBeLessThanOrEqual(systemClock.now());
  });

  it.each([1, 2, 7, 1024])("within one turn, reads again after maxReads = %i reads", (maxReads) => {
    const clock = coarseClock({ maxReads });
    const first = clock.now();
    busyUntil(first, 3);
    for (let i = 1; i < maxReads; i++) expect(clock.now(), `read ${i + 1}`).toBe(first);
    expect(clock.now()).toBeGreaterThanOrEqual(first + 3);
  });

  it("never runs backwards and never runs ahead of the system clock", async () => {
    const clock = coarseClock({ maxReads: 3 });
    let last = clock.now();
    for (let i = 0; i < 2000; i++) {
      if (i % 100 === 0) await nextTurn();
      const t = clock.now();
      expect(t).toBeGreaterThanOrEqual(last);
      expect(t).toBeLessThanOrEqual(systemClock.now());
      last = t;
    }
  });

  it("decides at the turn's instant: a limiter on it is exact at that granularity", async () => {
    const clock = coarseClock();
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 3, windowMs: 60_000 }, { clock });
    const answers = [1, 2, 3, 4].map(() => limiter.tryAcquire("k"));
    expect(answers.map((d) => d.allowed)).toEqual([true, true, true, false]);
    // Every decision of the turn carries the one reading as its instant.
    expect(new Set(answers.map((d) => d.at)).size).toBe(1);
    await nextTurn();
  });

  it("refuses unknown options and bad maxReads, naming them", () => {
    expect(() => coarseClock({ maxRead: 5 } as never)).toThrow(ArgumentError);
    expect(() => coarseClock({ maxRead: 5 } as never)).toThrow(/maxRead/);
    for (const bad of [0, -1, 1.5, Number.NaN, "3"]) {
      expect(() => coarseClock({ maxReads: bad as never })).toThrow(/`maxReads` must be a positive integer/);
    }
  });
});

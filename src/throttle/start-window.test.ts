// The store's clock estimate and the window arithmetic a start is checked with (issue 32).
import { describe, expect, it } from "vitest";
import { crossesWindow, earlyBy, fixedWindowsOf, StoreClock } from "./start-window.ts";

describe("start windows", () => {
  it("the store's offset is the quickest answer's, and old samples are forgotten", () => {
    const c = new StoreClock();
    expect(c.offset).toBe(0);
    c.sample(1000 + 300, 1000 + 5); // decided 5 ms before it was heard, store 300 ahead
    c.sample(2000 + 300, 2000 + 1);
    expect(c.offset).toBe(299);
    c.sample(15_000 - 50, 15_000); // a new bucket: the old one still counts
    expect(c.offset).toBe(299);
    c.sample(26_000 - 50, 26_000); // two buckets on: forgotten (and a store behind counts as level)
    expect(c.offset).toBe(0);
  });

  it("finds clock-aligned fixed windows and where an instant lands against a unit", () => {
    const windows = fixedWindowsOf([
      { algorithm: "fixed-window", limit: 6, windowMs: 1000 },
      { algorithm: "fixed-window", limit: 6, windowMs: 200, anchor: "first" },
      { algorithm: "gcra", limit: 6, periodMs: 1000 },
    ] as never);
    expect(windows).toEqual([1000]);
    expect(crossesWindow(windows, 1999, 2000)).toBe(true);
    expect(crossesWindow(windows, 1000, 1999)).toBe(false);
    expect(earlyBy(windows, 2000, 1999)).toBe(1);
    expect(earlyBy(windows, 2000, 2000)).toBe(0);
    expect(earlyBy([], 2000, 1000)).toBe(0);
  });
});

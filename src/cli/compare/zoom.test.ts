import { describe, expect, it } from "vitest";
import { timeTicks } from "./chart.ts";
import { MAX_RECENT, rollingCounts, ZoomCapture } from "./zoom.ts";

const T0 = Date.UTC(2026, 11, 1); // a window boundary for any window dividing a day

describe("ZoomCapture", () => {
  it("keeps the peak key's events from two windows before the boundary to one after, each algorithm's decisions with them", () => {
    const z = new ZoomCapture(1000, 2);
    // The last argument: bit i set when algorithm i admitted the event (3: both, 1: the first only).
    z.record(T0 - 2500, "a", 1, 3); // older than two windows before the boundary
    z.record(T0 - 1500, "a", 1, 1);
    z.record(T0 - 1, "b", 1, 3); // another key
    z.record(T0 - 1, "a", 2, 3);
    z.record(T0 + 10, "a", 1, 1);
    z.centre(T0 + 10, "a");
    z.record(T0 + 999, "a", 1, 0);
    z.record(T0 + 1000, "a", 1, 3); // the last instant drawn
    z.record(T0 + 1001, "a", 1, 3); // past it
    expect(z.result()).toEqual({
      key: "a",
      boundary: T0,
      windowMs: 1000,
      complete: true,
      events: [
        { at: T0 - 1500, cost: 1, allowed: [true, false] },
        { at: T0 - 1, cost: 2, allowed: [true, true] },
        { at: T0 + 10, cost: 1, allowed: [true, false] },
        { at: T0 + 999, cost: 1, allowed: [false, false] },
        { at: T0 + 1000, cost: 1, allowed: [true, true] },
      ],
    });
  });

  it("a later, higher peak moves it; a trace too dense to keep says so", () => {
    const z = new ZoomCapture(1000, 2);
    z.record(T0, "a", 1, 1);
    z.centre(T0, "a");
    z.record(T0 + 5000, "b", 1, 1);
    z.centre(T0 + 5000, "b");
    expect(z.result()).toMatchObject({ key: "b", boundary: T0 + 5000, complete: true });
    const dense = new ZoomCapture(1000, 2);
    for (let i = 0; i <= MAX_RECENT; i++) dense.record(T0 - 1999 + (i % 1000), "k", 1, 1);
    dense.centre(T0, "k");
    expect(dense.result()?.complete).toBe(false);
  });
});

describe("rollingCounts", () => {
  it("is the units admitted in (t − W, t] as steps: the boundary burst rises to 2N, then each half leaves a window later", () => {
    const z = new ZoomCapture(1000, 2);
    for (let i = 0; i < 3; i++) z.record(T0 - 1, "k", 1, 3);
    for (let i = 0; i < 3; i++) z.record(T0, "k", 1, 1);
    z.centre(T0, "k");
    const zoom = z.result();
    if (zoom === undefined) throw new Error("no zoom");
    expect(rollingCounts(zoom, 0, T0 - 1000, T0 + 1000)).toEqual([
      [T0 - 1000, 0],
      [T0 - 1, 3],
      [T0, 6],
      [T0 + 999, 3],
      [T0 + 1000, 0],
    ]);
    expect(rollingCounts(zoom, 1, T0 - 1000, T0 + 1000)).toEqual([
      [T0 - 1000, 0],
      [T0 - 1, 3],
      [T0 + 999, 0],
    ]);
    // From inside the window: what is already in it counts from the start.
    expect(rollingCounts(zoom, 0, T0 + 500, T0 + 1000)).toEqual([
      [T0 + 500, 6],
      [T0 + 999, 3],
      [T0 + 1000, 0],
    ]);
  });
});

describe("timeTicks", () => {
  it("labels round steps across the span, not only its ends", () => {
    expect(timeTicks(T0 - 1000, T0 + 1000, T0, 10).map((t) => t.label)).toEqual([
      "-1.0 s",
      "-0.8 s",
      "-0.6 s",
      "-0.4 s",
      "-0.2 s",
      "0.0 s",
      "0.2 s",
      "0.4 s",
      "0.6 s",
      "0.8 s",
      "1.0 s",
    ]);
    expect(timeTicks(0, 2000, 0, 8).map((t) => t.label)).toEqual(["0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s"]);
    expect(timeTicks(0, 30_000, 0, 8).map((t) => t.label)).toEqual([
      "0 s",
      "5 s",
      "10 s",
      "15 s",
      "20 s",
      "25 s",
      "30 s",
    ]);
  });
});

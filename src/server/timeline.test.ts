import { describe, expect, it } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { Activity } from "./activity.ts";
import { Timeline } from "./timeline.ts";

describe("Timeline", () => {
  it("counts admitted and denied per second, oldest first, zero for quiet seconds", () => {
    const t = new Timeline(5);
    t.record(100, true);
    t.record(100, true);
    t.record(100, false);
    t.record(102, false);
    expect(t.series(102)).toEqual({ start: 98, allowed: [0, 0, 2, 0, 0], denied: [0, 0, 1, 0, 1] });
  });

  it("is a fixed ring: seconds older than its length are gone, and a reused slot starts at zero", () => {
    const t = new Timeline(5);
    t.record(100, true);
    t.record(105, false); // same slot as 100
    expect(t.series(105)).toEqual({ start: 101, allowed: [0, 0, 0, 0, 0], denied: [0, 0, 0, 0, 1] });
    expect(t.series(1000).denied).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("Activity", () => {
  it("keeps per-rule series and the most denied keys; forgets removed rules", () => {
    const clock = new ManualClock().set(10_000_500);
    const a = new Activity(clock, 3);
    a.record("api", true, "alice");
    a.record("api", false, "mallory");
    a.record("api", false, "mallory");
    a.record("api", false, "bob");
    clock.advance(1000);
    a.record("api", false, "mallory");
    expect(a.view("api")).toEqual({
      series: { start: 9999, allowed: [0, 1, 0], denied: [0, 3, 1] },
      topDenied: [
        { key: "mallory", count: 3 },
        { key: "bob", count: 1 },
      ],
    });
    a.retain(["other"]);
    expect(a.view("api").topDenied).toEqual([]);
  });
});

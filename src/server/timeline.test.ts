import { describe, expect, it } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { Activity } from "./activity.ts";
import { Timeline } from "./timeline.ts";

describe("Timeline", () => {
  it("counts admitted, denied and failed per second, oldest first, zero for quiet seconds", () => {
    const t = new Timeline(5);
    t.record(100, "allowed");
    t.record(100, "allowed");
    t.record(100, "denied");
    t.record(101, "failure");
    t.record(102, "denied");
    expect(t.series(102)).toEqual({
      start: 98,
      allowed: [0, 0, 2, 0, 0],
      denied: [0, 0, 1, 0, 1],
      failed: [0, 0, 0, 1, 0],
    });
  });

  it("is a fixed ring: seconds older than its length are gone, and a reused slot starts at zero", () => {
    const t = new Timeline(5);
    t.record(100, "allowed");
    t.record(100, "failure");
    t.record(105, "denied"); // same slot as 100
    expect(t.series(105)).toEqual({
      start: 101,
      allowed: [0, 0, 0, 0, 0],
      denied: [0, 0, 0, 0, 1],
      failed: [0, 0, 0, 0, 0],
    });
    expect(t.series(1000).denied).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("Activity", () => {
  it("keeps each rule tier apart: series, totals, the most denied keys as rates; forgets removed tiers", () => {
    const clock = new ManualClock().set(Date.UTC(2026, 11, 1) + 500);
    const second = Date.UTC(2026, 11, 1) / 1000;
    const a = new Activity(clock, 3);
    a.record("api", null, "allowed", "alice");
    a.record("api", null, "denied", "mallory");
    a.record("api", null, "denied", "mallory");
    a.record("api", null, "denied", "bob");
    a.record("api", "pro", "denied", "bob");
    a.record("api", "pro", "failure", "bob"); // an outage: not a denial, not a limited key
    clock.advance(1000);
    a.record("api", null, "denied", "mallory");
    // Rates over at least 5 s (30 s half-life): a denial 1 s ago counts 2^(−1/30) over
    // (30 s / ln 2)(1 − 2^(−5/30)) ≈ 4.72 s, 12.4 per minute; mallory's three, 37.5.
    expect(a.view("api", null)).toEqual({
      tier: null,
      totals: { allowed: 1, denied: 4, failure: 0 },
      series: { start: second - 1, allowed: [0, 1, 0], denied: [0, 3, 1], failed: [0, 0, 0] },
      topDenied: [
        { key: "mallory", perMinute: 37.5 },
        { key: "bob", perMinute: 12.4 },
      ],
    });
    expect(a.view("api", "pro")).toEqual({
      tier: "pro",
      totals: { allowed: 0, denied: 1, failure: 1 },
      series: { start: second - 1, allowed: [0, 0, 0], denied: [0, 1, 0], failed: [0, 1, 0] },
      topDenied: [{ key: "bob", perMinute: 12.4 }],
    });
    a.retain([{ name: "api", tiers: {} }]);
    expect(a.view("api", "pro").totals).toEqual({ allowed: 0, denied: 0, failure: 0 });
    expect(a.view("api", null).totals.denied).toBe(4);
    a.retain([{ name: "other", tiers: {} }]);
    expect(a.view("api", null).topDenied).toEqual([]);
  });
});

describe("Activity's bound on detailed tiers", () => {
  it("keeps per-second figures and denied keys for at most maxDetailed tiers; a tier idle for the whole window gives its place up", () => {
    const clock = new ManualClock().set(Date.UTC(2026, 11, 1));
    const a = new Activity(clock, 3, 2);
    a.record("r1", null, "denied", "k");
    a.record("r2", null, "denied", "k");
    a.record("r3", null, "denied", "k");
    // r3's totals are kept; no place for its figures yet.
    expect(a.view("r3", null)).toMatchObject({ totals: { denied: 1 }, topDenied: [] });
    expect(a.view("r3", null).series.denied).toEqual([0, 0, 0]);
    expect(a.view("r1", null).series.denied).toEqual([0, 0, 1]);
    clock.advance(2000);
    a.record("r1", null, "allowed");
    clock.advance(2000);
    // r2 has been idle for the whole window (3 s): r3 takes its place; r1 was busy since.
    a.record("r3", null, "denied", "k");
    expect(a.view("r3", null)).toMatchObject({ totals: { denied: 2 }, topDenied: [{ key: "k" }] });
    expect(a.view("r3", null).series.denied).toEqual([0, 0, 1]);
    expect(a.view("r2", null)).toMatchObject({ totals: { denied: 1 }, topDenied: [] });
    expect(a.view("r1", null).series.allowed).toEqual([1, 0, 0]);
  });
});

// The local pauses of a throttle (key-queues.ts Pauses): pauses of one upstream window reach a
// process in any order (its own 429's, others' pushed by the store), so a shorter one never ends
// a running longer one here (bench/throttle-upstream.mjs: a process resumed while the upstream
// still refused, and its requests got 429s a few hundred ms after the window's first).
import { describe, expect, it } from "vitest";
import { Pauses } from "./key-queues.ts";

describe("Pauses", () => {
  it("a shorter pause heard later does not end a running longer one; a longer one extends it", () => {
    const p = new Pauses();
    p.set("k", 2000, 0); // this process's own 429
    p.set("k", 1500, 100, 1490); // another process's, pushed by the store (its own end)
    expect(p.until("k", 1600)).toBe(2000);
    p.set("k", 2500, 1700);
    expect(p.until("k", 2400)).toBe(2500);
    expect(p.until("k", 2500)).toBe(0);
  });

  it("the store's end is the latest of the ends it answered or pushed; a grant decided before it is void", () => {
    const p = new Pauses();
    p.set("k", 2000, 0);
    expect(p.voids("k", 1000, 10)).toBe(true); // the store's end is not known yet
    p.confirm("k", 1980);
    p.set("k", 1500, 100, 1490);
    expect(p.voids("k", 1900, 200)).toBe(true);
    expect(p.voids("k", 1980, 200)).toBe(false);
  });

  it("a pause that has ended is replaced by the next one, shorter or not", () => {
    const p = new Pauses();
    p.set("k", 2000, 0);
    p.set("k", 2100, 2050);
    expect(p.until("k", 2060)).toBe(2100);
  });

  it("a pause is followed by a cool-down as long as itself, then forgotten", () => {
    const p = new Pauses();
    p.set("k", 1_300, 1_000);
    expect([p.until("k", 1_299), p.cooling("k", 1_299)]).toEqual([1_300, 1_600]);
    // Over: no longer paused, cooling until 1,300 + 300.
    expect([p.until("k", 1_300), p.cooling("k", 1_300)]).toEqual([0, 1_600]);
    expect(p.cooling("k", 1_599)).toBe(1_600);
    expect(p.cooling("k", 1_600)).toBe(0);
    expect(p.cooling("other", 1_000)).toBe(0);
    // A new pause during a cool-down starts a new one (and its own cool-down after it).
    p.set("k", 2_000, 1_500);
    expect([p.until("k", 1_999), p.cooling("k", 2_400)]).toEqual([2_000, 2_500]);
    expect(p.cooling("k", 2_500)).toBe(0);
  });
});

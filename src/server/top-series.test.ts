import { describe, expect, it } from "vitest";
import { FOLDED, TopSeries } from "./top-series.ts";

const counter = () => ({ n: 0 });
const hit = (s: TopSeries<{ n: number }>, label: string, times = 1) => {
  for (let i = 0; i < times; i++) s.cell(label).n++;
};
const exported = (s: TopSeries<{ n: number }>) => Object.fromEntries([...s.entries()].map(([l, c]) => [l, c.n]));
const sum = (s: TopSeries<{ n: number }>) => [...s.entries()].reduce((t, [, c]) => t + c.n, 0);

describe("TopSeries", () => {
  it("gives the first labels series of their own while there is room, then folds the rest into one", () => {
    const s = new TopSeries(2, counter);
    hit(s, "a", 3);
    hit(s, "b", 1);
    hit(s, "c", 2);
    expect(exported(s)).toEqual({ a: 3, b: 1, [FOLDED]: 2 });
  });

  it("a label busier than twice the quietest takes its series at the next choice; every hit stays counted once", () => {
    const s = new TopSeries(2, counter);
    hit(s, "a", 10);
    hit(s, "b", 1);
    s.reselect(); // nothing waits yet
    hit(s, "c", 9); // folded until the choice
    expect(exported(s)).toEqual({ a: 10, b: 1, [FOLDED]: 9 });
    s.reselect();
    hit(s, "c", 4);
    hit(s, "b", 1); // b left: its hits now fold
    // c starts at 0 (a new series), b is no longer exported; the folded series never goes down.
    expect(exported(s)).toEqual({ a: 10, c: 4, [FOLDED]: 10 });
    expect(sum(s)).toBe(10 + 1 + 9 + 4 + 1 - 1); // b's one hit while own went with its series
  });

  it("does not swap near-equal labels (a waiting label needs more than twice the quietest's traffic)", () => {
    const s = new TopSeries(1, counter);
    hit(s, "a", 10);
    hit(s, "b", 19);
    s.reselect();
    expect(s.get("a")?.n).toBe(10);
    expect(s.get("b")).toBeUndefined();
  });

  it("tracks at most 4 × max labels however many distinct ones arrive", () => {
    const s = new TopSeries(10, counter);
    for (let i = 0; i < 100_000; i++) hit(s, `k${i}`);
    s.reselect();
    expect(s.size).toBe(10);
    expect([...s.entries()]).toHaveLength(11);
    expect(sum(s)).toBe(100_000);
  });

  it("a label spelled like the folded series counts in it (no two series share a label)", () => {
    const s = new TopSeries(5, counter);
    hit(s, FOLDED, 2);
    hit(s, "a");
    expect([...s.entries()].map(([l]) => l)).toEqual(["a", FOLDED]);
    expect(exported(s)[FOLDED]).toBe(2);
  });

  it("refuses a bound that is not a positive integer", () => {
    expect(() => new TopSeries(0, counter)).toThrow(/positive integer, got 0/);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { HeavyHitters } from "./heavy-hitters.ts";

const fresh = (k = 10, halfLifeMs = 0) => new HeavyHitters({ k, halfLifeMs, clock: new ManualClock() });

describe("HeavyHitters", () => {
  it("reports exact counts, largest first, when keys are few", () => {
    const h = fresh(3);
    for (const [key, n] of [
      ["a", 5],
      ["b", 3],
      ["c", 1],
    ] as const)
      for (let i = 0; i < n; i++) h.add(key);
    h.add("d", 2);
    expect(h.top()).toEqual([
      { key: "a", count: 5 },
      { key: "b", count: 3 },
      { key: "d", count: 2 },
    ]);
    expect(h.total).toBe(11);
  });

  it("memory is fixed: 100k distinct keys leave k tracked keys and the same counters", () => {
    const h = fresh(10);
    const before = h.stats();
    for (let i = 0; i < 100_000; i++) h.add(`key-${i}`);
    h.add("hot", 5000);
    const after = h.stats();
    expect(after.counters).toBe(before.counters);
    expect(after.tracked).toBe(10);
    expect(h.top()[0]?.key).toBe("hot");
  });

  it("a true heavy hitter (count above total/k plus the sketch error) is always reported", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 200, max: 3000 }), // noise events
        fc.integer({ min: 1, max: 2000 }), // distinct noise keys
        fc.integer({ min: 1, max: 3 }), // heavy keys
        fc.integer({ min: 5, max: 10 }), // k
        fc.integer(), // shuffle seed
        (noise, distinct, heavies, k, seed) => {
          // Each heavy key gets just more than total/k plus the sketch's error (e/1024 of the
          // total), the smallest count the guarantee covers: c > (noise + h·c)·(1/k + ε).
          const share = 1 / k + Math.E / 1024;
          const c = Math.floor((noise * share) / (1 - heavies * share)) + 1;
          const heavy = Array.from({ length: heavies }, (_, i) => `heavy-${i}`);
          const total = noise + heavies * c;
          expect(c).toBeGreaterThan(total * share);
          const events: string[] = [];
          for (let i = 0; i < noise; i++) events.push(`noise-${(i * 7919) % distinct}`);
          for (const key of heavy) for (let i = 0; i < c; i++) events.push(key);
          let s = seed >>> 0;
          for (let i = events.length - 1; i > 0; i--) {
            s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
            const j = s % (i + 1);
            [events[i], events[j]] = [events[j] as string, events[i] as string];
          }
          const h = fresh(k);
          for (const e of events) h.add(e);
          const reported = h.top().map((t) => t.key);
          for (const key of heavy) expect(reported).toContain(key);
          for (const t of h.top()) if (heavy.includes(t.key)) expect(t.count).toBeGreaterThanOrEqual(c);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("never under-counts a key (estimates are upper bounds)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 3000 }), (keys) => {
        const h = fresh(5);
        const exact = new Map<string, number>();
        for (const k of keys) {
          h.add(`k${k}`);
          exact.set(`k${k}`, (exact.get(`k${k}`) ?? 0) + 1);
        }
        for (const t of h.top()) expect(t.count).toBeGreaterThanOrEqual(exact.get(t.key) as number);
      }),
    );
  });

  it("counts halve every half-life, so a new flood takes over from an old one", () => {
    const clock = new ManualClock();
    const h = new HeavyHitters({ k: 2, halfLifeMs: 30_000, clock });
    h.add("old", 64);
    h.add("older", 32);
    clock.advance(60_000);
    expect(h.top()).toEqual([
      { key: "old", count: 16 },
      { key: "older", count: 8 },
    ]);
    h.add("new", 20);
    expect(h.top().map((t) => t.key)).toEqual(["new", "old"]);
    clock.advance(30_000 * 20);
    expect(h.top()).toEqual([]);
  });

  it("decays continuously: half a half-life in, a count is 1/√2 of itself", () => {
    const clock = new ManualClock().set(Date.UTC(2026, 11, 1));
    const h = new HeavyHitters({ k: 2, halfLifeMs: 30_000, clock });
    h.add("a", 64);
    clock.advance(15_000);
    expect(h.top()[0]?.count).toBeCloseTo(64 / Math.SQRT2, 9);
    h.add("a", 64); // entered at this instant, weighing in full
    expect(h.top()[0]?.count).toBeCloseTo(64 / Math.SQRT2 + 64, 9);
    clock.advance(45_000);
    expect(h.top()[0]?.count).toBeCloseTo((64 / Math.SQRT2 + 64) / 2 ** 1.5, 9);
    expect(h.total).toBeCloseTo((64 / Math.SQRT2 + 64) / 2 ** 1.5, 9);
  });

  it("turns a steady key's count into its rate per minute, from the first seconds on", () => {
    const clock = new ManualClock().set(Date.UTC(2026, 11, 1));
    const h = new HeavyHitters({ k: 2, halfLifeMs: 30_000, clock });
    // 3 per second for 8 s: already read as 180 per minute, not the 1/6 of it the count alone would say.
    for (let s = 0; s < 8; s++, clock.advance(1000)) h.add("early", 3);
    expect(h.perMinute(h.top()[0]?.count as number)).toBeCloseTo(180, -1);
    // 2 per second for 10 minutes (20 half-lives: the count has settled), 1 per second for another.
    for (let s = 0; s < 600; s++, clock.advance(1000)) h.add("steady", 2);
    for (let s = 0; s < 600; s++, clock.advance(500)) h.add("half", 1);
    const [steady, half] = [h.top().find((t) => t.key === "steady"), h.top().find((t) => t.key === "half")];
    expect(h.perMinute(half?.count as number)).toBeCloseTo(120, -1);
    expect(h.perMinute(steady?.count as number)).toBeLessThan(1); // stopped 5 minutes (10 half-lives) ago
    expect(new HeavyHitters({ k: 1, halfLifeMs: 0, clock }).perMinute(5)).toBeNaN();
  });

  it("cuts keys to 200 characters for display", () => {
    const h = fresh(1);
    h.add("x".repeat(60_000));
    expect(h.top()[0]?.key).toBe(`${"x".repeat(200)}…`);
  });
});

// A compact slot holding a bound of its key's state, not the state (dense-codec.ts: a log of 2
// or more entries kept at its newest): decisions from it say `approximate` until the record is
// fresh, in the `Map` tier it returns to and across a snapshot (issue 34, restore-differential).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 7, 9, 0, 0, 0);
const SPEC = { algorithm: "sliding-log", limit: 5, windowMs: 60_000 } as const;

describe("a key read back from a bound in the compact tier", () => {
  it("decides `approximate` until its record is fresh, and stays a bound across a restart", () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ maxKeys: 1, seed: 7 });
    const limiter = createLimiter(SPEC, { clock, store, name: "b" });
    expect(limiter.tryAcquire("a").approximate).toBeUndefined();
    clock.advance(10);
    expect(limiter.tryAcquire("a").approximate).toBeUndefined(); // two entries, 10 ms apart
    limiter.tryAcquire("z"); // pushes "a" into the compact tier, both entries at the newest
    expect(store.stats().compactKeys).toBe(1);
    const back = limiter.tryAcquire("a"); // read back: a bound (the older entry counts 10 ms longer)
    expect(back).toMatchObject({ allowed: true, remaining: 2, approximate: true });
    // The bound is what the Map tier holds now, and what a snapshot carries.
    const text = store.snapshot(clock.now());
    expect(JSON.parse(text).tables[0].bounds).toEqual(["a"]);
    const restored = new MemoryStore({ maxKeys: 1, seed: 7 });
    restored.restore(text);
    const again = createLimiter(SPEC, { clock, store: restored, name: "b" });
    expect(again.tryAcquire("a").approximate).toBe(true);
    // Pushed out again: its compact row is marked a bound (flag 2).
    again.tryAcquire("y");
    const row = JSON.parse(restored.snapshot(clock.now())).tables[0].compact.find((r: number[]) => (r[5] ?? 0) & 2);
    expect(row).toBeDefined();
    expect(again.tryAcquire("a").approximate).toBe(true);
    // Once the record is fresh (every entry out of its window), it is exact again.
    clock.advance(60_001);
    expect(again.tryAcquire("a").approximate).toBeUndefined();
  });
});

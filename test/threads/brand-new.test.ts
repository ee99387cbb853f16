// Brand-new keys are not read back from the summary past `maxKeys`: the summary filter
// (src/stores/threads/summary-filter.ts) holds the keys pushed out into the summary, and a key it
// does not hold decides as the fresh key it is. Without it, once a flood had pushed a few
// thousand spent keys into the summary, every cell was live and spent, and every new key was
// read back over-counted and refused.
import { createLimiter, ManualClock } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { H } from "../../src/stores/threads/layout.ts";
import { LEAST_BYTES } from "../../src/stores/threads/params.ts";

const T0 = Date.UTC(2026, 11, 2, 9);
const SPEC = { algorithm: "gcra", limit: 10, periodMs: 60_000 } as const;

describe("SharedMemoryStore past maxKeys: brand-new keys under a flood of keys spending their limit", () => {
  it("are admitted exactly, while the flood's keys stay refused", () => {
    const clock = new ManualClock(T0);
    // recordWords the rule's own width: its records fill the blocks eight to a bucket, the geometry
    // this test was sized for (records are as wide as their rule, compact/shared-bucket.ts).
    const store = new SharedMemoryStore({ maxKeys: 3000, seed: 5, maxBytes: LEAST_BYTES, recordWords: 4 });
    const limiter = createLimiter(SPEC, { store, clock, name: "api" });
    // 10,000 keys spend their whole limit at one instant: 8,000 entries hold most of them exactly,
    // the rest are pushed out into the summary (all of its cells live and spent).
    const FLOOD = 10_000;
    for (let i = 0; i < FLOOD; i++) for (let e = 0; e < 10; e++) limiter.tryAcquire(`flood${i}`);
    expect(store.stats().evicted).toBeGreaterThan(2000);
    let refused = 0;
    let approximate = 0;
    for (let i = 0; i < 1000; i++) {
      const d = limiter.tryAcquire(`new${i}`);
      if (!d.allowed) refused++;
      if (d.approximate === true) approximate++;
    }
    // A filter answers by bits: a brand-new key whose bits the flood's keys all set (a false
    // positive) is read back. This filter (sized for maxKeys alone, past its capacity) lets
    // about one key in 1,000 through: seeds 1–6 refused 1, 0, 0, 0, 1, 0 (spent filter, 12
    // probes; 1, 2, 0, 1, 0, 1 with the summary filter's 4). Without a filter: all of them.
    expect(refused).toBeLessThanOrEqual(2);
    expect(approximate).toBeLessThanOrEqual(2);
    // No flood key passes its limit, summarised or not.
    let again = 0;
    for (let i = 0; i < FLOOD; i++) if (limiter.tryAcquire(`flood${i}`).allowed) again++;
    expect(again).toBe(0);
    store.close();
  });
});

describe("SharedMemoryStore summary filter: rules bound in different threads", () => {
  it("still rotate it: any thread judges a rule by the latest instant any thread decided it at", () => {
    // Two instances on one memory stand for two threads: each has its own summary and clocks,
    // and binds one rule only. Before the shared instant, neither could judge the other's rule,
    // so the filter never forgot anything after its first rotation.
    const owner = new SharedMemoryStore({ maxKeys: 64, seed: 3 });
    const other = SharedMemoryStore.attach(owner.handle);
    const clockA = new ManualClock(T0);
    const clockB = new ManualClock(T0);
    const WINDOW = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;
    const a = createLimiter(WINDOW, { store: owner, clock: clockA, name: "a" });
    const b = createLimiter(WINDOW, { store: other, clock: clockB, name: "b" });
    let n = 0;
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 1000; i++) {
        const key = `flood${n++}`;
        a.tryAcquire(key);
        b.tryAcquire(key);
      }
      clockA.advance(1500);
      clockB.advance(1500);
    }
    const rotations = Atomics.load(new Int32Array(owner.handle.buffer), H.filterEpoch);
    expect(rotations).toBeGreaterThanOrEqual(10);
    owner.close();
    other.close();
  });
});

// Keys that come back are protected from floods past `maxKeys` (src/stores/threads/room.ts): a
// key used again after another key arrived in its bucket is marked returning, and a full bucket
// gives up entries that are not returning first. So a flood of keys that come once, or spend
// their whole limit in one burst and leave, churns through the table while the returning keys
// stay in it, exact: never read back from the summary (which over-counts), never refused.
import { createLimiter, ManualClock } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { LEAST_BYTES } from "../../src/stores/threads/params.ts";

const T0 = Date.UTC(2026, 11, 2, 9, 30);
// 30 per minute, and the whole run lasts 0.2 s: a well-behaved key's 20 requests are all
// within its limit, and every flood key's record still counts at the end (none is fresh again,
// so room is made by giving entries up, never by dropping fresh ones).
const SPEC = { algorithm: "gcra", limit: 30, periodMs: 60_000 } as const;
const GOOD = 200;
const ROUNDS = 20;

/**
 * Rounds 10 ms apart: every well-behaved key sends a request, then the flood: `flood` new keys
 * sending `each` requests one after another. A round's flood (2 keys a bucket) leaves the
 * well-behaved keys in the table until they come back in the next round; twenty rounds bring
 * five times the table's entries (given up first-in first-out, the well-behaved keys would go
 * in the third round). Returns the well-behaved keys' refusals and
 * approximate decisions, and the store's counters.
 */
function run(flood: number, each: number) {
  const clock = new ManualClock(T0);
  // 1,000 buckets of 8 entries: 8,000 entries in all.
  // recordWords the rule's own width: its records fill the blocks eight to a bucket, the geometry
  // this test was sized for (records are as wide as their rule, compact/shared-bucket.ts).
  const store = new SharedMemoryStore({ maxKeys: 3000, seed: 7, maxBytes: LEAST_BYTES, recordWords: 4 });
  const limiter = createLimiter(SPEC, { store, clock, name: "api" });
  let refused = 0;
  let approximate = 0;
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (let g = 0; g < GOOD; g++) {
      const d = limiter.tryAcquire(`good${g}`);
      if (!d.allowed) refused++;
      if (d.approximate === true) approximate++;
    }
    for (let i = 0; i < flood; i++) {
      const key = `flood${n++}`;
      for (let e = 0; e < each; e++) limiter.tryAcquire(key);
    }
    clock.advance(10);
  }
  const stats = store.stats();
  store.close();
  return { refused, approximate, evicted: stats.evicted };
}

describe("SharedMemoryStore past maxKeys: returning keys stay exact under a flood", () => {
  it("of one-shot keys", () => {
    const r = run(2000, 1);
    // The flood did overflow the table (the case under test), many times over...
    expect(r.evicted).toBeGreaterThan(30_000);
    // ...and not one of the well-behaved keys' 4,000 decisions was read back: all admitted, all exact.
    expect(r).toMatchObject({ refused: 0, approximate: 0 });
  });

  it("of keys spending their whole limit in one burst", () => {
    const r = run(2000, 30);
    expect(r.evicted).toBeGreaterThan(30_000);
    expect(r).toMatchObject({ refused: 0, approximate: 0 });
  });
});

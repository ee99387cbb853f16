// A key alone in its bucket, updated over and over, each update drafting its bucket into a
// recycled block (shared-word.wat): the draft must keep the entry's pin bit and mark the
// bucket's end, or a pinned reset would be pushed out again and a recycled block's stale entries
// would come back.
import { createLimiter, ManualClock } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { expect, it } from "vitest";
import { bucketOf } from "../../src/stores/compact/bucket.ts";
import { fingerprint } from "../../src/stores/compact/fingerprint.ts";
import { KEYS_PER_BUCKET } from "../../src/stores/threads/params.ts";

const SEED = 7;
const MAX_KEYS = 24;

/** A store whose one rule has registry index 0 (`maxRules: 1`), hashed with SEED. */
function storeOf(): SharedMemoryStore {
  // recordWords the rule's own width: its records fill the blocks eight to a bucket, the geometry
  // this test was sized for (records are as wide as their rule, compact/shared-bucket.ts).
  return new SharedMemoryStore({ maxKeys: MAX_KEYS, seed: SEED, maxRules: 1, recordWords: 3 });
}

/** `count` keys that share one bucket of the rule at registry index 0. */
function keysOfOneBucket(count: number): string[] {
  const buckets = Math.max(16, Math.ceil(MAX_KEYS / KEYS_PER_BUCKET));
  const h = new Uint32Array(3);
  const byBucket = new Map<number, string[]>();
  for (let i = 0; ; i++) {
    const key = `k-${i}`;
    fingerprint(SEED, key, h);
    const b = bucketOf(1, h[2] as number, buckets);
    const keys = byBucket.get(b) ?? [];
    keys.push(key);
    byBucket.set(b, keys);
    if (keys.length === count) return keys;
  }
}

it("a pinned key alone in its bucket stays pinned through its own updates", () => {
  const [victim, ...others] = keysOfOneBucket(18) as [string, ...string[]];
  const fillers = others.slice(0, 8);
  const later = others.slice(8);
  const clock = new ManualClock(1_800_000_000_000);
  const store = storeOf();
  const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 60_000 }, { store, clock, name: "p" });
  limiter.tryAcquire(victim, 2);
  // Eight more keys in the bucket push the victim (the oldest) into the summary.
  for (const key of fillers) limiter.tryAcquire(key);
  expect(store.stats().evicted).toBe(1);
  expect(limiter.peek(victim)).toMatchObject({ allowed: false, approximate: true });
  // Forget the fillers (the summary holds none of them), then reset the victim: a pinned fresh
  // record, alone in its bucket.
  for (const key of fillers) limiter.reset(key);
  limiter.reset(victim);
  expect(store.stats()).toMatchObject({ keys: 1, unpinned: 0 });
  // Updated alone, and again with a recycled block under it.
  expect(limiter.tryAcquire(victim)).toMatchObject({ allowed: true, remaining: 1 });
  expect(limiter.peek(victim)).toMatchObject({ allowed: true, remaining: 0 });
  expect(store.stats().keys).toBe(1);
  // A full bucket gives up its oldest unpinned entry: never the victim, if it kept its pin.
  for (const key of later) limiter.tryAcquire(key);
  expect(store.stats().evicted).toBeGreaterThan(1);
  const next = limiter.tryAcquire(victim);
  expect(next).toMatchObject({ allowed: true, remaining: 0 });
  expect(next.approximate).toBeUndefined();
  expect(limiter.tryAcquire(victim)).toMatchObject({ allowed: false, remaining: 0 });
});

it("a key alone in its bucket, updated many times over recycled blocks, never sees a stale entry", () => {
  const keys = keysOfOneBucket(8);
  const clock = new ManualClock(1_800_000_000_000);
  const store = storeOf();
  const limiter = createLimiter(
    { algorithm: "fixed-window", limit: 1000, windowMs: 60_000 },
    { store, clock, name: "s" },
  );
  // Blocks that held eight entries go back to the pool and come back under the lone key.
  for (let round = 0; round < 20; round++) {
    for (const key of keys) limiter.tryAcquire(key);
    for (const key of keys.slice(1)) limiter.reset(key);
    expect(store.stats().keys).toBe(1);
    for (let i = 0; i < 5; i++) limiter.tryAcquire(keys[0] as string);
    expect(store.stats().keys).toBe(1);
  }
  // Exactly what six checks a round and no stale entry give (a peek reports the check it would make).
  expect(limiter.peek(keys[0] as string)).toMatchObject({ remaining: 1000 - 20 * 6 - 1 });
  // The others were forgotten: fresh keys.
  for (const key of keys.slice(1)) expect(limiter.peek(key)).toMatchObject({ remaining: 1000 - 1 });
});

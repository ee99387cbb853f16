// A block without a ban on a SharedMemoryStore whose bucket has no entry to give up (every one
// holds a running block or a pin): the block cannot be kept, and says so (a StoreError) instead
// of answering banned and being lifted at the key's next check.
import { createLimiter, ManualClock, StoreError } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 1);

it("every block it answers is kept until it ends; one it cannot keep is a StoreError", () => {
  const clock = new ManualClock(T0);
  const store = new SharedMemoryStore({ maxKeys: 16 });
  const limiter = createLimiter({ algorithm: "fixed-window", limit: 3, windowMs: 60_000 }, { clock, store });
  const kept: string[] = [];
  let refused = 0;
  for (let i = 0; i < 200; i++) {
    try {
      expect(limiter.block(`k${i}`, 5000)).toMatchObject({ banned: true, retryAfterMs: 5000 });
      kept.push(`k${i}`);
    } catch (error) {
      expect(error).toBeInstanceOf(StoreError);
      expect((error as Error).message).toMatch(/block/);
      refused++;
    }
  }
  // 200 blocks cannot all fit in a store sized for 16 keys: some were refused, none lost.
  expect(refused).toBeGreaterThan(0);
  clock.set(T0 + 4999);
  for (const key of kept) expect(limiter.tryAcquire(key), key).toMatchObject({ banned: true, retryAfterMs: 1 });
  clock.set(T0 + 5000);
  for (const key of kept) expect(limiter.tryAcquire(key).allowed, key).toBe(true);
});

// A decision's release() after reset(key) must not free the slot of a lease taken after the
// reset (found by an attack from outside). Receipts are the decision instant (`at`), so a new
// holder acquired in the same ms as the old one shares its receipt: the stale release freed the
// new holder's slot, and a limit-1 key had two holders (MemoryStore, SharedMemoryStore, Redis,
// ClusterStore). Now each store's resets are kept in order in this process
// (src/lease-resets.ts): a handle taken before its key's reset frees and renews nothing.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("lease receipts after reset");

async function staleReleaseAfterReset(store: MemoryStore | RedisStore | SharedMemoryStore): Promise<boolean> {
  // One ManualClock reading for all three calls: the same ms, as on a busy server.
  const clock = new ManualClock(1_900_000_000_123);
  const lim = createLimiter(
    { algorithm: "concurrency", limit: 1, leaseMs: 30_000 },
    { store, clock, name: "attack-lease" },
  );
  const old = await lim.tryAcquire("k");
  await lim.reset("k");
  const holder = await lim.tryAcquire("k");
  expect(holder.allowed).toBe(true);
  await old.release?.();
  const intruder = await lim.tryAcquire("k");
  return intruder.allowed; // true: two holders of a limit-1 key
}

describe("a release after reset frees nothing of a later holder", () => {
  it("MemoryStore: the stale release lets no second holder in", async () => {
    expect(await staleReleaseAfterReset(new MemoryStore())).toBe(false);
  });
  it("SharedMemoryStore: the stale release lets no second holder in", async () => {
    expect(await staleReleaseAfterReset(new SharedMemoryStore({ maxKeys: 100 }))).toBe(false);
  });
  it.skipIf(redis === undefined)("RedisStore: the stale release lets no second holder in", async () => {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix: uniquePrefix("attack-lease") });
    try {
      expect(await staleReleaseAfterReset(store)).toBe(false);
    } finally {
      await store.close();
    }
  });
});

describe("a handle of a reset key renews nothing; handles of other keys keep acting", () => {
  it("MemoryStore: renew after reset is denied; another key's release still frees its slot", async () => {
    const clock = new ManualClock(1_900_000_000_123);
    const lim = createLimiter(
      { algorithm: "concurrency", limit: 1, leaseMs: 30_000 },
      { store: new MemoryStore(), clock, name: "reset-renew" },
    );
    const a = await lim.tryAcquire("a");
    const b = await lim.tryAcquire("b");
    await lim.reset("a");
    const holder = await lim.tryAcquire("a");
    expect(holder.allowed).toBe(true);
    const renewed = await a.renew?.();
    expect(renewed?.allowed).toBe(false);
    expect(renewed?.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    // b was not reset: its release frees its slot.
    await b.release?.();
    expect((await lim.tryAcquire("b")).allowed).toBe(true);
    // The holder taken after the reset releases normally.
    await holder.release?.();
    expect((await lim.tryAcquire("a")).allowed).toBe(true);
  });
});

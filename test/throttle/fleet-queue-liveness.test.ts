// The fleet queue's script on real Redis, driven directly (issue 32): keys come back from the
// wire unchanged (lone surrogates, NUL); an owner alive by subscription needs no heartbeat and
// is dead once its link closes; an owner forgotten by deadline hears so when it enqueues; a
// grant the store lost is taken back by its renewal, and new grants wait meanwhile.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { FleetGrant, FleetListener, FleetQueue } from "../../src/core/fleet-queue.ts";
import { keyOfWire, wireKey } from "../../src/stores/redis/fleet-queue.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue: liveness");

interface Owner {
  q: FleetQueue;
  store: RedisStore;
  grants: string[];
}

const stores: RedisStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => {});
});

async function owners(
  n: number,
  config: { liveness?: "heartbeat" | "subscription"; ownerTtlMs?: number; leaseMs?: number },
): Promise<{ prefix: string; list: Owner[] }> {
  const prefix = uniquePrefix("fleet-liveness");
  const list: Owner[] = [];
  for (let i = 0; i < n; i++) {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix });
    stores.push(store);
    const grants: string[] = [];
    const listener: FleetListener = {
      granted: (_key: string, gs: readonly FleetGrant[]) => {
        for (const g of gs) grants.push(g.id);
      },
      wake: () => {},
      relinked: () => {},
    };
    const q = await store.openFleetQueue({
      rate: undefined,
      concurrency: {
        id: "name:throttle:t:concurrency",
        spec: { algorithm: "concurrency", limit: 1, leaseMs: config.leaseMs ?? 10_000 } as never,
      },
      ownerTtlMs: config.ownerTtlMs ?? 10_000,
      ...(config.liveness === undefined ? {} : { liveness: config.liveness }),
      listener,
    });
    list.push({ q, store, grants });
  }
  return { prefix, list };
}

const until = async (f: () => boolean) => {
  for (let i = 0; i < 400 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(f()).toBe(true);
};

describe("wire keys", () => {
  it.each([
    ["plain", "user:42"],
    ["lone high surrogate", "ab\uD83D"],
    ["lone low surrogate", "\uDE00x"],
    ["a pair stays as it is", "😀"],
    ["NUL", "a\u0000b"],
    ["NUL before hex digits", "\u0000d800"],
    ["escape-like text", "\u0000\u0000"],
  ])("%s round-trips", (_name, key) => {
    expect(keyOfWire(wireKey(key))).toBe(key);
    // What Redis sends back: the UTF-8 of the wire form, decoded.
    expect(keyOfWire(Buffer.from(wireKey(key), "utf8").toString("utf8"))).toBe(key);
  });
});

describe.skipIf(redis === undefined)("fleet queue liveness on Redis", () => {
  it("by subscription: a silent owner stays alive; one whose link closed is dead at once", async () => {
    const { list } = await owners(3, { liveness: "subscription", ownerTtlMs: 100 });
    const [a, b, c] = list as [Owner, Owner, Owner];
    expect(a.q.heartbeatless).toBe(true);
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    await c.q.enqueue("k", [{ id: "c1", priority: 5, cost: 1 }]);
    await new Promise((r) => setTimeout(r, 300)); // three times the owner TTL, no heartbeat
    await a.q.release("k", "a1", false);
    await until(() => b.grants.length === 1); // b is alive: its subscription is
    await c.q.close(); // c's link ends (as a killed process's does)
    await new Promise((r) => setTimeout(r, 200)); // for Redis to see the connection close
    await b.q.release("k", "b1", false);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.grants).toEqual([]);
    await a.q.enqueue("k", [{ id: "a2", priority: 5, cost: 1 }]);
    expect(a.grants).toEqual(["a1", "a2"]); // c1 left the queue: its owner was dead
  });

  it("by subscription: a queue that expired while its tickets waited is sent again at the rescue call", async () => {
    // (A lease shorter than 8 owner TTLs: the queue also outlives a running job's lease.)
    const { list } = await owners(2, { liveness: "subscription", ownerTtlMs: 50, leaseMs: 100 });
    const [a, b] = list as [Owner, Owner];
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    await new Promise((r) => setTimeout(r, 600)); // past 8 owner TTLs (and the lease) without a call
    expect(await b.q.heartbeat("k")).toBe(false); // b hears its queue is gone
  });

  it("by deadline: an owner forgotten while it stalled hears so on its next enqueue", async () => {
    const { list } = await owners(2, { ownerTtlMs: 200 });
    const [a, b] = list as [Owner, Owner];
    expect(a.q.heartbeatless).toBe(false);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]); // (false: a first call is a stranger's)
    expect(await a.q.enqueue("k", [{ id: "a0", priority: 9, cost: 1 }])).toBe(true);
    await new Promise((r) => setTimeout(r, 300)); // a "stalls" past its deadline
    await b.q.release("k", "b1", false); // a1 reaches the head: dropped as dead
    expect(await a.q.enqueue("k", [{ id: "a2", priority: 5, cost: 1 }])).toBe(false); // a hears it
    // Sent again, a1 is granted (a2 behind it waits for the slot).
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    await until(() => a.grants.length === 1);
    expect(a.grants).toEqual(["a2"]); // a1, sent again, queued behind a2 (a0 left with a1)
  });

  it("a grant the store lost is taken back by its renewal, and new grants wait for leaseMs", async () => {
    const { prefix, list } = await owners(2, { liveness: "subscription", leaseMs: 60_000 });
    const [a, b] = list as [Owner, Owner];
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    expect(a.grants).toEqual(["a1"]);
    // A restart that lost everything: the queue, its hash and the concurrency record.
    const admin = new Redis(redis?.url ?? "");
    try {
      const keys = await admin.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
      await admin.del(...keys);
    } finally {
      admin.disconnect();
    }
    // b's ticket, sent again after the lost link, is not granted into the empty record...
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }], true);
    // ...a's running job takes its slot back at its renewal...
    expect(await a.q.renew("k", "a1")).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.grants).toEqual([]);
    // ...and its release frees the slot, but the hold (leaseMs from the loss) still stands.
    await a.q.release("k", "a1", false);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.grants).toEqual([]);
  });
});

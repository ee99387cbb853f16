// Every key the Redis fleet queue writes expires (SPEC §8), found by the attack (report-attack
// finding 4): a throttle that ran one job per key and closed left the key's owners set and its
// hash (`seq`) with no expiry, 2 Redis keys per throttle key for ever (queue.lua set the expiry
// before its first write created them). Also: the queue's keys expire together and are refreshed
// by every call, so the arrival counter never restarts under waiting tickets (order across
// owners holds), and a running job's grant outlives its lease between renewals.
import { Redis } from "ioredis";
import { createThrottle, systemClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import type { FleetGrant, FleetQueue } from "../../src/core/fleet-queue.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("fleet queue expiry");
const url = redis?.url ?? "";

const clients: Redis[] = [];
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c();
  for (const c of clients) c.disconnect();
});

/** The prefix's keys with their PTTL (-1: no expiry). */
async function ttls(prefix: string): Promise<Map<string, number>> {
  const client = new Redis(url);
  clients.push(client);
  const out = new Map<string, number>();
  for (const k of await client.keys(`${prefix}*`)) out.set(k, await client.pttl(k));
  return out;
}

/** Deletes and names the keys without an expiry (so a failing run leaves nothing behind). */
async function forever(prefix: string): Promise<string[]> {
  const keys = [...(await ttls(prefix))].filter(([, t]) => t === -1).map(([k]) => k);
  if (keys.length > 0) await (clients[0] as Redis).del(...keys);
  return keys;
}

describe.skipIf(redis === undefined)("the Redis fleet queue's keys all expire", () => {
  for (const concurrency of [undefined, 4]) {
    it(`50 keys, one job each, then close: no key without an expiry (concurrency ${concurrency ?? "none"})`, {
      timeout: 20_000,
    }, async () => {
      const prefix = uniquePrefix("fleet-expiry");
      const store = await RedisStore.connect({ url, prefix });
      const t = createThrottle({
        name: "leftover",
        store,
        clock: systemClock,
        rate: { algorithm: "gcra", limit: 100, periodMs: 1000 },
        ...(concurrency === undefined ? {} : { concurrency }),
      });
      await Promise.all(Array.from({ length: 50 }, (_, i) => t.schedule(async () => i, { key: `tenant-${i}` })));
      await t.close();
      await store.close();
      expect((await ttls(prefix)).size).toBeGreaterThan(0);
      expect(await forever(prefix)).toEqual([]);
    });
  }

  it("while tickets wait every key expires, no sooner than the queue needs; order across owners holds", {
    timeout: 20_000,
  }, async () => {
    const prefix = uniquePrefix("fleet-expiry");
    const heard: string[] = [];
    const open = async (): Promise<FleetQueue> => {
      const store = await RedisStore.connect({ url, prefix });
      const q = await store.openFleetQueue({
        rate: undefined,
        // A lease far longer than the owners' heartbeat span (8 × 100 ms): its grant must outlive it.
        concurrency: {
          id: "expiry:concurrency",
          spec: { algorithm: "concurrency", limit: 1, leaseMs: 30_000 } as never,
        },
        ownerTtlMs: 100,
        liveness: "subscription",
        listener: {
          granted: (_key: string, gs: readonly FleetGrant[]) => {
            for (const g of gs) heard.push(g.id);
          },
          wake: () => {},
          relinked: () => {},
        },
      });
      closers.push(async () => {
        await q.close();
        await store.close();
      });
      return q;
    };
    const [a, b] = [await open(), await open()];
    const check = async () => {
      const all = await ttls(prefix);
      expect(all.size).toBeGreaterThan(0);
      // The lease's record and the queue's keys: each expires, none before the lease could end.
      for (const [k, t] of all) {
        expect(t, k).toBeGreaterThan(25_000);
        expect(t, k).toBeLessThanOrEqual(31_000);
      }
    };
    await a.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]); // granted: holds the one slot
    await check();
    await b.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    await a.enqueue("k", [{ id: "a2", priority: 5, cost: 1 }]);
    await b.enqueue("k", [
      { id: "b2", priority: 5, cost: 1 },
      { id: "b3", priority: 4, cost: 1 },
    ]);
    await check();
    for (const [q, id] of [
      [a, "a1"],
      [b, "b3"],
      [b, "b1"],
      [a, "a2"],
    ] as const) {
      await q.release("k", id, false);
      await check();
    }
    for (let i = 0; i < 200 && heard.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    // Priority first (b3), then arrival across the two owners.
    expect(heard.map((id) => id.slice(id.indexOf(".") + 1))).toEqual(["a1", "b3", "b1", "a2", "b2"]);
    await b.release("k", "b2", false);
    expect(await forever(prefix)).toEqual([]);
  });
});

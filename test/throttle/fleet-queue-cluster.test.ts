// The fleet queue on a 3-master Redis Cluster started here: a key's queue, its rate record and
// its slot record share one hash tag, so each queue call is one script in one slot (a CROSSSLOT
// error would fail every job). Two throttles (two owners) share keys spread over the cluster;
// every job runs once, and never more than `concurrency` of one key at once.
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { uniquePrefix } from "../support/redis-server.ts";
import { clusterRedis, useClusterClients } from "../support/redis-topologies.ts";

const cluster = await clusterRedis("throttle fleet queue on Cluster");

describe.skipIf(cluster === undefined)("fleet queue on Redis Cluster", () => {
  const clients = useClusterClients(cluster);

  it("keys spread over the slots: every job runs once, within each key's concurrency", {
    timeout: 60_000,
  }, async () => {
    const prefix = uniquePrefix("fleet-cluster");
    const stores = [0, 1].map(() => new RedisStore({ client: clients.io, prefix, denyCache: false }));
    const throttles = stores.map((store) =>
      createThrottle({
        name: "cluster",
        store,
        clock: systemClock,
        rate: { algorithm: "gcra", limit: 200, periodMs: 1000 },
        concurrency: 2,
        leaseMs: 10_000,
      }),
    );
    const errors: unknown[] = [];
    for (const t of throttles) t.on("error", (e) => errors.push(e.error));
    const keys = ["a", "b", "c", "d", "e", "{f}"];
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    const ran: string[] = [];
    await Promise.all(
      throttles.flatMap((t, p) =>
        Array.from({ length: 30 }, (_, i) => {
          const key = keys[i % keys.length] as string;
          return t.schedule(
            async () => {
              ran.push(`${p}-${i}`);
              running.set(key, (running.get(key) ?? 0) + 1);
              most.set(key, Math.max(most.get(key) ?? 0, running.get(key) as number));
              await new Promise((r) => setTimeout(r, 5));
              running.set(key, (running.get(key) as number) - 1);
            },
            { key, priority: i % 10 },
          );
        }),
      ),
    );
    expect(errors).toEqual([]);
    expect(new Set(ran).size).toBe(60);
    expect(ran.length).toBe(60);
    for (const m of most.values()) expect(m).toBeLessThanOrEqual(2);
    for (const t of throttles) await t.close();
    for (const s of stores) await s.close();
  });
});

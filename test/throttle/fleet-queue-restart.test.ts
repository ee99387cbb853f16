// A Redis restart in the middle of a fleet-queue run (a redis-server started here, without
// persistence: the restarted server has lost every ticket, grant and lease). Two throttles on two
// connections share one queue; the server is killed after some jobs started and started again.
// No job runs twice; every job either ran and resolved or was rejected to its caller; jobs
// waiting through the outage run once the server is back (their tickets are sent again).
// On ioredis and on valkey-glide (whose subscription's drop and return glide-pubsub.ts now tells:
// glide-pubsub-restart.test.ts). After the restart the queue holds new grants for a lease's length
// (running jobs' leases were lost with the server: queue.lua), so the lease is short here.
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import type { RedisClientLike } from "../../src/stores/redis/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";
import { runThroughOutage } from "./outage-run.ts";

const glide = (await import("@valkey/valkey-glide").catch(() => undefined)) as
  | { GlideClient: { createClient(o: object): Promise<{ close(): void }> } }
  | undefined;

/** A store on a client of `kind` for `url`, and how to end both. */
async function connect(kind: string, url: string): Promise<{ store: RedisStore; end: () => Promise<void> }> {
  if (kind === "ioredis") {
    const store = await RedisStore.connect({ url, prefix: `restart-${kind}:`, timeoutMs: 2000 });
    return { store, end: () => store.close() };
  }
  const { hostname, port } = new URL(url);
  const client = await (glide as NonNullable<typeof glide>).GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port) }],
    requestTimeout: 2_000,
  });
  const store = new RedisStore({
    client: client as unknown as RedisClientLike,
    prefix: `restart-${kind}:`,
    timeoutMs: 2000,
  });
  return {
    store,
    end: async () => {
      await store.close();
      client.close();
    },
  };
}

const can = await canStartRedis("throttle fleet queue restart");
const server: OwnedRedis | undefined = can ? await startOwnedRedis() : undefined;
afterAll(async () => {
  await server?.dispose();
});

describe.skipIf(server === undefined)("fleet queue across a Redis restart", () => {
  it.each(["ioredis", "valkey-glide"])(
    "%s: no job runs twice, none is lost without an error to its caller",
    { timeout: 60_000 },
    async (kind) => {
      if (kind === "valkey-glide" && glide === undefined) return;
      const redis = server as OwnedRedis;
      const owners = await Promise.all([0, 1].map(() => connect(kind, redis.url)));
      const stores = owners.map((o) => o.store);
      const throttles = stores.map((store) =>
        createThrottle({ name: "restart", store, clock: systemClock, concurrency: 2, leaseMs: 3000 }),
      );
      const { resolved, errors } = await runThroughOutage(throttles, async () => {
        await redis.stop();
        await new Promise((r) => setTimeout(r, 500));
        await redis.start();
      });
      // The outage was real (calls failed), and the jobs waiting through it ran afterwards.
      // (glide sends a call again once it has reconnected, within its requestTimeout: none may fail.)
      if (kind === "ioredis") expect(errors.length).toBeGreaterThan(0);
      expect(resolved.length).toBe(80);
      for (const t of throttles) await t.close();
      for (const o of owners) await o.end();
    },
  );
});

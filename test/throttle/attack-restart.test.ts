// Attack on the fleet queue (issue 32): never more than `concurrency` running, across a Redis
// restart. A job running through the restart still holds its slot: jobs waiting in another
// process must not start beside it once Redis is back (its lease renewals tell the store).
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const can = await canStartRedis("throttle fleet queue: attack, restart");
const server: OwnedRedis | undefined = can ? await startOwnedRedis() : undefined;

describe.skipIf(server === undefined)("fleet queue attack: concurrency across a Redis restart", () => {
  afterAll(() => server?.dispose());

  // Cause: the restart forgets the running job's grant and lease; its renewal ('n' in queue.lua)
  // answers 0 and LeaseKeeper does nothing about it, and the resent tickets of the other process
  // are granted at once into an empty concurrency record.
  it("concurrency 1: a job running through the restart keeps the other process waiting", {
    timeout: 30_000,
  }, async () => {
    const redis = server as OwnedRedis;
    const stores = await Promise.all(
      [0, 1].map(() => RedisStore.connect({ url: redis.url, prefix: "attack-restart:", timeoutMs: 2000 })),
    );
    const [a, b] = stores.map((store) =>
      createThrottle({ name: "restart", store, clock: systemClock, concurrency: 1, leaseMs: 1500 }),
    ) as [ReturnType<typeof createThrottle>, ReturnType<typeof createThrottle>];
    for (const t of [a, b]) t.on("error", () => {});
    let running = 0;
    let most = 0;
    const job = (ms: number) => async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
    };
    try {
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const long = a.schedule(async () => {
        running++;
        most = Math.max(most, running);
        holding();
        await new Promise((r) => setTimeout(r, 5000));
        running--;
      });
      await held;
      const waiting = Array.from({ length: 3 }, () => b.schedule(job(10)));
      await new Promise((r) => setTimeout(r, 300));
      await redis.stop();
      await new Promise((r) => setTimeout(r, 300));
      await redis.start();
      await Promise.all([long, ...waiting]);
      expect(most).toBe(1);
    } finally {
      await a.close();
      await b.close();
      for (const s of stores) await s.close();
    }
  });
});

// maxKeyBytes on Redis: a 1 MB key never reaches Redis; what is stored is its hash (the bound
// is applied above every store, by the limiter).
import { createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("key bound (standalone)");

describe.skipIf(redis === undefined)("maxKeyBytes on RedisStore", () => {
  const clients = useStandaloneClients(redis);

  it("stores a 1 MB key as its hash: a short Redis key, the same state for the same key", async () => {
    const prefix = uniquePrefix("key-bound");
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      { clock: new ManualClock(1_800_000_000_000), name: "big", store: new RedisStore({ client: clients.io, prefix }) },
    );
    const key = "x".repeat(1 << 20);
    expect((await limiter.tryAcquire(key)).allowed).toBe(true);
    expect((await limiter.tryAcquire(key)).allowed).toBe(false);
    const keys = (await clients.io.keys(`${prefix}*`)) as string[];
    expect(keys).toHaveLength(1);
    expect(keys[0]?.length).toBeLessThan(prefix.length + 80);
    expect(keys[0]).toContain("sha256:");
    limiter.close();
  });
});

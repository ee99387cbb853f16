// Attack on the fleet queue (issue 32): memory stays bounded. A throttle with a rate alone (no
// concurrency) on real Redis runs 3,000 jobs on one busy key: its queue hash in Redis must not
// keep a field per job that ever ran.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue: attack, memory");

describe.skipIf(redis === undefined)("fleet queue attack: Redis memory of a busy key", () => {
  const admin = new Redis(redis?.url ?? "redis://127.0.0.1:6379", { lazyConnect: true });
  afterAll(() => admin.disconnect());

  // Cause: queue.lua writes a 'g:<id>' field for every grant, and only a release or cancel
  // deletes it; with no concurrency the runner never releases (runner.ts fleetGranted: no lease),
  // and each job's ticket refreshes the hash's PEXPIRE, so a busy key's hash grows by a field
  // (about 112 bytes) per job, without bound.
  it("3,000 rate-only jobs leave the key's queue hash small", { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix("attack-memory");
    const client = new Redis(redis?.url ?? "", { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
    await new Promise((resolve) => client.once("ready", resolve));
    const store = new RedisStore({ client, prefix, timeoutMs: 5000 });
    const throttle = createThrottle({
      name: "memory",
      store,
      clock: systemClock,
      rate: { algorithm: "gcra", limit: 5000, periodMs: 1000 },
    });
    try {
      for (let round = 0; round < 3; round++) {
        await Promise.all(Array.from({ length: 1000 }, () => throttle.schedule(async () => {})));
      }
      const hashes = (await admin.keys(`${prefix}*`)).filter((k) => k.endsWith("Hdefault"));
      expect(hashes).toHaveLength(1);
      expect(await admin.hlen(hashes[0] as string)).toBeLessThan(100);
    } finally {
      await throttle.close();
      await store.close();
      client.disconnect();
    }
  });
});

// Attack on the fleet queue (issue 32): Redis commands per job at saturation must stay a small
// constant (≤ 3) whatever the number of waiters. Counted with INFO commandstats on a
// redis-server of this test's own: 40 processes' throttles (each its own connection, its own
// owner) keep jobs waiting on one rate of 5 starts a second. Measured: 2 owners 2.83, 40 owners
// 5.15 EVALSHA+PUBLISH per job.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const can = await canStartRedis("throttle fleet queue: attack, commands per job");
const server: OwnedRedis | undefined = can ? await startOwnedRedis() : undefined;

describe.skipIf(server === undefined)("fleet queue attack: commands per job with many waiters", () => {
  afterAll(() => server?.dispose());

  async function perJob(n: number): Promise<number> {
    const url = server?.url ?? "";
    const owners: Array<{ client: Redis; store: RedisStore; throttle: ReturnType<typeof createThrottle> }> = [];
    for (let i = 0; i < n; i++) {
      const client = new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
      await new Promise((resolve) => client.once("ready", resolve));
      const store = new RedisStore({ client, prefix: "attack-cmds:", timeoutMs: 5000 });
      const throttle = createThrottle({
        name: "cmds",
        store,
        clock: systemClock,
        rate: { algorithm: "gcra", limit: 5, periodMs: 1000 },
      });
      await throttle.schedule(async () => {}, { key: "warm-up" }); // opens its subscription
      owners.push({ client, store, throttle });
    }
    const admin = new Redis(url);
    let started = 0;
    let stop = false;
    try {
      const lanes = owners.map(async ({ throttle }) => {
        while (!stop) {
          await throttle
            .schedule(async () => {
              started++;
            })
            .catch(() => {});
        }
      });
      // At saturation: counted from a second in, once every process has its job waiting (each
      // process's first enqueue is a cost per process, not per job).
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await admin.config("RESETSTAT");
      const from = started;
      await new Promise((resolve) => setTimeout(resolve, 6000));
      const info = await admin.info("commandstats");
      const jobs = started - from;
      stop = true;
      const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      const result = (calls("evalsha") + calls("eval") + calls("publish")) / jobs;
      console.log(`attack commands: ${n} owners, ${jobs} jobs, ${result.toFixed(2)} EVALSHA+EVAL+PUBLISH per job`);
      expect(jobs).toBeGreaterThan(10);
      for (const { throttle } of owners) await throttle.close();
      await Promise.all(lanes);
      return result;
    } finally {
      stop = true;
      for (const { throttle, store, client } of owners) {
        await throttle.close().catch(() => {});
        await store.close().catch(() => {});
        client.disconnect();
      }
      admin.disconnect();
    }
  }

  // Cause: every owner with waiting tickets sends a heartbeat per key every ownerTtlMs / 3
  // (fleet-link.ts #watch), each one EVALSHA running a full pump in queue.lua: a cost per waiting
  // process and second, not per job, so per job it grows with the number of waiting processes.
  it("40 waiting owners at 5 starts a second: EVALSHA + PUBLISH per job ≤ 3", { timeout: 30_000 }, async () => {
    expect(await perJob(40)).toBeLessThanOrEqual(3);
  });
});

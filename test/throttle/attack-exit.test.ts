// Attack on the fleet queue (issue 32): a process that is done exits. On Redis, a throttle with
// `concurrency` (default leaseMs, 60 s) runs three jobs that wait for each other, then its store
// closes; the throttle is idle (docs/throttle.md: "An idle or closed throttle holds no timer").
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue: attack, process exit");
const KEYS = 300;
const DIST = pathToFileURL(join(ROOT, "dist")).href;

describe.skipIf(redis === undefined)("fleet queue attack: a process that is done exits", () => {
  beforeAll(() => ensureBuilt());

  // Cause: the head owner's wake-up (fleet-link.ts #wake, a ref'd `after`) is armed for the
  // head's wait (here the running job's lease, leaseMs) and is not cancelled when the head's
  // ticket is granted, so it holds the process until it fires, 60 s later.
  it("an idle throttle with concurrency on Redis holds nothing open", { timeout: 30_000 }, () => {
    const code = `
      import { createThrottle } from "${DIST}/index.js";
      import { RedisStore } from "${DIST}/stores/redis/index.js";
      const store = await RedisStore.connect({ url: ${JSON.stringify(redis?.url)}, prefix: ${JSON.stringify(uniquePrefix("attack-exit"))} });
      const t = createThrottle({ name: "exit", store, concurrency: 1 });
      await Promise.all([1, 2, 3].map(() => t.schedule(() => new Promise((r) => setTimeout(r, 20)))));
      console.log("done", JSON.stringify(t.stats()));
      await store.close();
    `;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8", timeout: 15_000 });
    expect(r.stdout).toBe('done {"queued":0,"running":0,"done":3,"failed":0,"expired":0}\n');
    expect(r.error).toBeUndefined(); // not killed by the 15 s timeout
    expect(r.status).toBe(0);
  });

  // Same cause, per key: each key whose head had to wait keeps its wake-up timer (fleet-link.ts
  // #wake, until the lease wait fires) after its jobs are done, and its heartbeat timer until the
  // next beat: an idle throttle over many keys holds thousands of timers for up to leaseMs.
  // 300 keys (was 2,000, which ran past 30 s at load ~40): a timer kept per key leaves >= 300,
  // far above the bound of 10, so the count proves the same thing.
  it("300 keys done: an idle throttle holds no timer per key", { timeout: 30_000 }, async () => {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix: uniquePrefix("attack-keys-timers") });
    const throttle = createThrottle({ name: "timers", store, clock: systemClock, concurrency: 1 });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    try {
      const jobs = [];
      for (let i = 0; i < KEYS; i++)
        for (const _ of [1, 2]) jobs.push(throttle.schedule(async () => {}, { key: `k${i}` }));
      await Promise.all(jobs);
      await new Promise((r) => setTimeout(r, 100));
      expect(throttle.stats()).toEqual({ queued: 0, running: 0, done: 2 * KEYS, failed: 0, expired: 0 });
      expect(timers() - before).toBeLessThan(10);
    } finally {
      await throttle.close();
      await store.close();
    }
  });
});

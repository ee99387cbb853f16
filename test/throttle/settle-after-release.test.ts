// After `await throttle.schedule(...)` settles, quitting the Redis client is safe (docs/throttle.md,
// "When a job's promise settles"): the job's store calls (a lease's release, an expired ticket's
// cancel) are answered before its caller hears. Before, the caller heard first and the release
// was written after the caller's QUIT; ioredis and iovalkey then reject the client's own
// `quit()` with "Connection is closed." (a script's top-level await exits with code 1; 3 of 6
// loaded runs of test/server/script-exit.test.ts did), and the slot stayed taken until leaseMs.
import { Redis as IoRedis } from "ioredis";
import { Redis as IoValkey } from "iovalkey";
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import type { RedisClientLike } from "../../src/stores/redis/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("settle after release");
const ROUNDS = 12;

describe.skipIf(redis === undefined)("a job's promise settles after its store calls", () => {
  const clients: Record<string, (url: string) => IoRedis | IoValkey> = {
    ioredis: (url) => new IoRedis(url),
    iovalkey: (url) => new IoValkey(url),
  };
  for (const [kind, connect] of Object.entries(clients)) {
    it(`${kind}: quit right after the jobs settle: quit() never rejects, no store call fails`, {
      timeout: 20_000,
    }, async () => {
      const failedQuits: string[] = [];
      const errors: unknown[] = [];
      const prefix = uniquePrefix(`settle-${kind}`);
      for (let round = 0; round < ROUNDS; round++) {
        const client = connect(redis?.url ?? "");
        // The client's own 'error' (EPIPE on a command written after QUIT) is only logged by ioredis.
        client.on("error", () => {});
        const store = new RedisStore({ client: client as unknown as RedisClientLike, prefix, timeoutMs: 5_000 });
        const throttle = createThrottle({
          name: `r${round}`,
          store,
          clock: systemClock,
          concurrency: 1,
          leaseMs: 10_000,
        });
        throttle.on("error", (e) => errors.push(e.error));
        let open: (() => void) | undefined;
        const first = throttle.schedule(() => new Promise<void>((r) => (open = r)));
        while (open === undefined) await new Promise((r) => setTimeout(r, 5));
        // Waits behind the first and expires: its ticket is cancelled in the store.
        const expired = throttle.schedule(async () => "never", { maxWaitMs: 20 });
        await expect(expired).rejects.toMatchObject({ code: "ERR_WAIT_TIMEOUT" });
        open();
        await first;
        await throttle.schedule(async () => "last");
        await client.quit().catch((error: unknown) => failedQuits.push(String(error)));
      }
      expect(failedQuits).toEqual([]);
      expect(errors.map(String)).toEqual([]);
    });
  }
});

// The fleet queue on each Redis client a RedisStore accepts (ioredis, iovalkey, node-redis,
// valkey-glide): two owners (a client, a store and a throttle each, as two processes have) share
// one key's queue with `concurrency: 1`, so nearly every start is a grant made by the other
// owner's call (its release, its wake-up) and PUBLISHed to this owner's channel: the owners
// must hear them. On valkey-glide every job used to wait until maxWaitMs: its adapter refused
// the owner channel's subscription, so the queue never opened (glide-pubsub.ts).
import { Redis as IoRedis } from "ioredis";
import { Redis as IoValkey } from "iovalkey";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import type { RedisClientLike } from "../../src/stores/redis/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("fleet queue on each client");
const glide = (await import("@valkey/valkey-glide").catch(() => undefined)) as
  | {
      GlideClient: {
        createClient(o: object): Promise<{ close(): void }>;
      };
    }
  | undefined;

/** A client of `kind` and how to end it. */
async function connect(kind: string, url: string): Promise<{ client: unknown; end: () => Promise<void> }> {
  if (kind === "ioredis" || kind === "iovalkey") {
    const client = kind === "ioredis" ? new IoRedis(url) : new IoValkey(url);
    return { client, end: async () => void client.disconnect() };
  }
  if (kind === "node-redis") {
    const client = createClient({ url });
    await client.connect();
    return { client, end: async () => void (await client.close()) };
  }
  const { hostname, port } = new URL(url);
  const client = await (glide as NonNullable<typeof glide>).GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port) }],
    requestTimeout: 2_000,
  });
  return { client, end: async () => client.close() };
}

const JOBS = 6;

describe.skipIf(redis === undefined)("the fleet queue on each client", () => {
  for (const kind of ["ioredis", "iovalkey", "node-redis", "valkey-glide"]) {
    it.skipIf(kind === "valkey-glide" && glide === undefined)(
      `${kind}: two owners' jobs all run, one at a time, on grants the other owner made`,
      { timeout: 20_000 },
      async () => {
        const prefix = uniquePrefix(`fleet-${kind}`);
        const owners = await Promise.all([0, 1].map(() => connect(kind, redis?.url ?? "")));
        const throttles = owners.map(({ client }) =>
          createThrottle({
            name: "clients",
            store: new RedisStore({ client: client as RedisClientLike, prefix, timeoutMs: 5_000 }),
            clock: systemClock,
            concurrency: 1,
            // Spacing too: a waiting head is woken by its owner's timer, the next grant published.
            rate: { algorithm: "gcra", limit: 50, periodMs: 1_000, burst: 1 },
            leaseMs: 10_000,
          }),
        );
        const errors: unknown[] = [];
        for (const t of throttles) t.on("error", (e) => errors.push(e));
        let running = 0;
        let most = 0;
        const ran: string[] = [];
        const job = (name: string) => async () => {
          running++;
          most = Math.max(most, running);
          await new Promise((r) => setTimeout(r, 10));
          ran.push(name);
          running--;
          return name;
        };
        const all = throttles.flatMap((t, o) =>
          Array.from({ length: JOBS }, (_, i) => t.schedule(job(`${o}.${i}`), { maxWaitMs: 15_000 })),
        );
        const outcomes = await Promise.allSettled(all);
        expect(
          outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason)),
          JSON.stringify(errors.slice(0, 3), (_, v) => (v instanceof Error ? v.message : v)),
        ).toEqual([]);
        expect(ran).toHaveLength(2 * JOBS);
        expect(most).toBe(1);
        for (const t of throttles) expect(t.stats()).toMatchObject({ queued: 0, running: 0, done: JOBS });
        for (const t of throttles) await t.close();
        for (const o of owners) await o.end();
      },
    );
  }
});

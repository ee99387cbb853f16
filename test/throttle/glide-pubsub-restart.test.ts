// valkey-glide's subscription across a Redis restart (a redis-server started here): glide
// reconnects and subscribes again on its own but says nothing, so a fleet queue owner never
// learnt that grants published meanwhile were lost (its tickets were not sent again). The hub
// (src/stores/redis/glide-pubsub.ts) now checks its channels: the link is reported lost while
// the server is down and live once glide has subscribed again, and messages flow again.
import { afterAll, describe, expect, it } from "vitest";
import { glideSubscribe } from "../../src/stores/redis/glide-pubsub.ts";
import type { RedisClientLike } from "../../src/stores/redis/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { within } from "../support/poll.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const glide = (await import("@valkey/valkey-glide").catch(() => undefined)) as
  | {
      GlideClient: {
        createClient(o: object): Promise<{ close(): void; publish(message: string, channel: string): Promise<number> }>;
      };
    }
  | undefined;
const can = glide !== undefined && (await canStartRedis("glide subscription across a restart"));
const server: OwnedRedis | undefined = can ? await startOwnedRedis() : undefined;
afterAll(async () => {
  await server?.dispose();
});

/** Waits until `ok()` (or gives up after the generous deadline; the assertion after it then fails). */
async function poll(ok: () => boolean): Promise<void> {
  for (const more = within(15_000); !ok() && more(); ) await new Promise((r) => setTimeout(r, 20));
  expect(ok()).toBe(true);
}

describe.skipIf(server === undefined)("valkey-glide subscription across a Redis restart", () => {
  it("the link is reported lost, then live again, and a message published after the restart is heard", {
    timeout: 20_000,
  }, async () => {
    const redis = server as OwnedRedis;
    const G = (glide as NonNullable<typeof glide>).GlideClient;
    const options = { addresses: [{ host: "127.0.0.1", port: redis.port }], requestTimeout: 1_000 };
    const client = await G.createClient(options);
    const publisher = await G.createClient(options);
    const links: boolean[] = [];
    const heard: string[] = [];
    const sub = await glideSubscribe(
      client as unknown as Record<string, unknown>,
      "restart-channel",
      (m) => heard.push(m),
      (live) => links.push(live),
      () => {},
    );
    try {
      await publisher.publish("before", "restart-channel");
      await poll(() => heard.includes("before"));
      await redis.stop();
      await poll(() => links.includes(false));
      await redis.start();
      await poll(() => links.at(-1) === true);
      expect(links).toEqual([false, true]);
      // The publisher reconnects on its own schedule (a publish before it has times out after
      // requestTimeout: seen once on a quiet CI run): publish until one goes through and is heard.
      for (const more = within(15_000); !heard.includes("after") && more(); ) {
        await publisher.publish("after", "restart-channel").catch(() => 0);
        for (let i = 0; i < 10 && !heard.includes("after"); i++) await new Promise((r) => setTimeout(r, 20));
      }
      expect(heard).toContain("after");
    } finally {
      await sub.close();
      client.close();
      publisher.close();
    }
  });

  it("a fleet queue owner on a glide RedisStore is told the link came back (relinked: it sends its tickets again)", {
    timeout: 20_000,
  }, async () => {
    const redis = server as OwnedRedis;
    const G = (glide as NonNullable<typeof glide>).GlideClient;
    const client = await G.createClient({
      addresses: [{ host: "127.0.0.1", port: redis.port }],
      requestTimeout: 1_000,
    });
    const store = new RedisStore({
      client: client as unknown as RedisClientLike,
      prefix: "glide-relink:",
      timeoutMs: 1000,
    });
    let relinked = 0;
    const queue = await store.openFleetQueue({
      rate: undefined,
      concurrency: {
        id: "name:throttle:relink:concurrency",
        spec: { algorithm: "concurrency", limit: 1, leaseMs: 3000 } as never,
      },
      ownerTtlMs: 1000,
      liveness: "subscription",
      listener: { granted: () => {}, wake: () => {}, relinked: () => relinked++ },
    });
    try {
      // The queue opens at once and subscribes meanwhile (F2): the link is live once it is heartbeatless.
      await poll(() => queue.heartbeatless === true);
      await redis.stop();
      await redis.start();
      await poll(() => relinked > 0);
    } finally {
      await queue.close().catch(() => {});
      await store.close();
      client.close();
    }
  });
});

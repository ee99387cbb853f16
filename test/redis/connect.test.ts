// RedisStore.connect (the store builds and configures its own ioredis client) and the clients a
// store refuses at construction, saying what to pass instead. Sentinel through connect():
// checks go to the master, and after a kill -9 of it, resume on the promoted replica.
import { Redis } from "ioredis";
import { createLimiter, type Decision, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/net.ts";
import { hasRedisServer, standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { MASTER_NAME, startSentinel, type TestSentinel } from "../support/redis-topologies.ts";

const shared = await standaloneRedis("RedisStore.connect");
const canStart = await hasRedisServer();

/** A client with commands but no connection, no events (an HTTP client that is not @upstash/redis). */
class HttpLike {
  async evalsha(_sha: string, _keys: string[], _args: string[]): Promise<unknown> {
    return [];
  }
  async eval(_script: string, _keys: string[], _args: string[]): Promise<unknown> {
    return [];
  }
  async del(..._keys: string[]): Promise<number> {
    return 0;
  }
  async publish(_channel: string, _message: string): Promise<number> {
    return 0;
  }
}

describe("clients RedisStore refuses at construction", () => {
  it("a client with commands but no connection, naming it and what to pass instead", () => {
    expect(() => new RedisStore({ client: new HttpLike() as never })).toThrow(
      /`client` \(HttpLike\) sends commands but is neither ioredis nor node-redis: it has no duplicate\(\).*report its connection\. Pass an ioredis \(or iovalkey\) `Redis`\/`Cluster`, a node-redis `createClient\(\)`\/`createCluster\(\)` client or a valkey-glide `GlideClient`\/`GlideClusterClient`, or let sluice build one with `await RedisStore\.connect\(url\)`, or an `@upstash\/redis` `Redis`\./,
    );
  });

  it("anything else, with the same advice", () => {
    for (const client of [undefined, null, 42, "redis://127.0.0.1:6379", {}, { get: () => 1 }]) {
      expect(() => new RedisStore({ client: client as never }), String(client)).toThrow(
        /must be (a Redis client object|an ioredis or node-redis client) \(got \w+\)\. Pass an ioredis/,
      );
    }
  });
});

describe.skipIf(shared === undefined)("RedisStore.connect", () => {
  it("builds a ready client from a URL: the first check is decided by Redis, close() closes the client", async () => {
    const store = await RedisStore.connect({ url: shared?.url as string, prefix: uniquePrefix("connect") });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
      { store, clock: new ManualClock(1_800_000_000_000) },
    );
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await limiter.tryAcquire("k"));
    expect(seen.map((d) => [d.allowed, d.failure])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, undefined],
    ]);
    await store.close();
    // The client is gone: a check now fails by policy (nothing hangs open).
    const after = await limiter.tryAcquire("k2");
    expect(after.failure?.policy).toBe("deny");
  });

  it("rejects bad options before connecting, and an unreachable Redis within connectTimeoutMs", async () => {
    await expect(RedisStore.connect({ url: shared?.url as string, bogus: 1 } as never)).rejects.toThrow(
      /unknown RedisStore.connect option `bogus` \(expected url, cluster, sentinels, name, clientOptions, connectTimeoutMs, prefix/,
    );
    await expect(RedisStore.connect({ url: "http://x" })).rejects.toThrow(
      /`url` must be a redis:\/\/ or rediss:\/\/ URL/,
    );
    await expect(RedisStore.connect({ sentinels: ["127.0.0.1:1"] })).rejects.toThrow(/`sentinels` needs `name`/);
    await expect(RedisStore.connect({ url: shared?.url as string, cluster: ["127.0.0.1:1"] })).rejects.toThrow(
      /give one of url, cluster, sentinels/,
    );
    await expect(RedisStore.connect({ client: new Redis({ lazyConnect: true }) } as never)).rejects.toThrow(
      /pass your client to `new RedisStore\(\{ client \}\)`/,
    );
    const port = await freePort();
    await expect(RedisStore.connect({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 })).rejects.toThrow(
      new RegExp(`Redis at redis://127\\.0\\.0\\.1:${port} was not ready within 300 ms \\(.*ECONNREFUSED`),
    );
  });
});

describe.skipIf(!canStart)("RedisStore.connect with Sentinel", () => {
  let sentinel: TestSentinel | undefined;
  afterAll(async () => {
    await sentinel?.dispose();
  });

  it("checks go to the master; after kill -9 of it they are answered by policy, then resume on the promoted replica", async () => {
    sentinel = (await startSentinel()) as TestSentinel;
    const store = await RedisStore.connect({
      sentinels: sentinel.sentinelPorts.map((port) => `127.0.0.1:${port}`),
      name: MASTER_NAME,
      prefix: uniquePrefix("connect-sentinel"),
      timeoutMs: 300,
    });
    try {
      const limiter = createLimiter(
        { algorithm: "token-bucket", capacity: 1000, refillPerSecond: 0.000001 },
        { store, name: "sentinel" },
      );
      expect((await limiter.tryAcquire("k")).failure).toBeUndefined();
      await sentinel.master.stop();
      const seen: Decision[] = [];
      let resumed: Decision | undefined;
      for (let i = 0; i < 600 && resumed === undefined; i++) {
        const d = await limiter.tryAcquire("k");
        seen.push(d);
        if (d.failure === undefined && seen.some((s) => s.failure !== undefined)) resumed = d;
        else if (d.failure !== undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(seen.some((d) => d.failure?.policy === "deny")).toBe(true);
      expect(await sentinel.masterPort()).toBe(sentinel.replica.port);
      // Decided by the new master.
      expect(resumed).toMatchObject({ allowed: true });
    } finally {
      await store.close();
    }
  }, 90_000);
});

// RedisStore construction: warnings for client options under which a timed-out command could
// be sent late (once per client), and the failure fallback as a Store given the same `now`.
import { Cluster, Redis } from "ioredis";
import { createClient, createCluster } from "redis";
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { type RedisClientLike, RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { blackHole } from "../support/net.ts";
import { warningsOf } from "../support/warnings.ts";

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The SLUICE_REDIS_CLIENT_OPTIONS warnings emitted while `build()` runs. */
async function clientOptionWarnings(build: () => unknown): Promise<string[]> {
  return (await warningsOf(build)).filter((w) => w.code === "SLUICE_REDIS_CLIENT_OPTIONS").map((w) => w.message);
}

describe("RedisStore client options", () => {
  it("warns once per client configured so that a timed-out command could be sent late, naming the options", async () => {
    const loose = new Redis({ lazyConnect: true });
    cleanups.push(() => loose.disconnect());
    const first = await clientOptionWarnings(() => new RedisStore({ client: loose }));
    expect(first.length).toBe(1);
    expect(first[0]).toMatch(/enableOfflineQueue: true/);
    expect(first[0]).toMatch(/autoResendUnfulfilledCommands: true/);
    expect(await clientOptionWarnings(() => new RedisStore({ client: loose, prefix: "other:" }))).toEqual([]);

    const cluster = new Cluster([{ host: "127.0.0.1", port: 1 }], { lazyConnect: true });
    cleanups.push(() => cluster.disconnect());
    const clusterWarnings = await clientOptionWarnings(() => new RedisStore({ client: cluster }));
    expect(clusterWarnings.length).toBe(1);
    expect(clusterWarnings[0]).toMatch(/retryDelayOnTryAgain: 100/);
    expect(clusterWarnings[0]).toMatch(/redisOptions\.autoResendUnfulfilledCommands/);

    const node = createClient({ url: "redis://127.0.0.1:1" });
    const nodeWarnings = await clientOptionWarnings(
      () => new RedisStore({ client: node as unknown as RedisClientLike }),
    );
    expect(nodeWarnings.length).toBe(1);
    expect(nodeWarnings[0]).toMatch(/disableOfflineQueue/);

    const nodeCluster = createCluster({ rootNodes: [{ url: "redis://127.0.0.1:1" }] });
    const nodeClusterWarnings = await clientOptionWarnings(
      () => new RedisStore({ client: nodeCluster as unknown as RedisClientLike }),
    );
    expect(nodeClusterWarnings.length).toBe(1);
    expect(nodeClusterWarnings[0]).toMatch(/defaults\.disableOfflineQueue/);
  });

  it("does not warn for the documented settings", async () => {
    const strict = new Redis({ lazyConnect: true, enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
    cleanups.push(() => strict.disconnect());
    expect(await clientOptionWarnings(() => new RedisStore({ client: strict }))).toEqual([]);
    const cluster = new Cluster([{ host: "127.0.0.1", port: 1 }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryDelayOnTryAgain: 0,
      redisOptions: { autoResendUnfulfilledCommands: false },
    });
    cleanups.push(() => cluster.disconnect());
    expect(await clientOptionWarnings(() => new RedisStore({ client: cluster }))).toEqual([]);
    const node = createClient({ url: "redis://127.0.0.1:1", disableOfflineQueue: true });
    expect(await clientOptionWarnings(() => new RedisStore({ client: node as unknown as RedisClientLike }))).toEqual(
      [],
    );
    const nodeCluster = createCluster({
      rootNodes: [{ url: "redis://127.0.0.1:1" }],
      defaults: { disableOfflineQueue: true },
    });
    expect(
      await clientOptionWarnings(() => new RedisStore({ client: nodeCluster as unknown as RedisClientLike })),
    ).toEqual([]);
  });
});

describe("onError: { fallback: Store }", () => {
  it("decides the same rule on the fallback store at the same now, and forgets on reset", async () => {
    // A port that accepts connections and never answers: every check times out.
    const hole = await blackHole();
    cleanups.push(hole.close);
    const { port } = hole;
    const client = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: null });
    client.on("error", () => {});
    cleanups.push(() => client.disconnect());
    const fallback = new MemoryStore();
    const store = new RedisStore({ client, timeoutMs: 100, onError: { fallback } });
    const clock = new ManualClock(120_000);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 3, windowMs: 60_000 }, { store, clock });
    const first = await Promise.all([1, 2, 3, 4].map(() => limiter.tryAcquire("k")));
    expect(first.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(first.every((d) => d.failure?.policy === "fallback")).toBe(true);
    // The fallback read the limiter's now: the window ends 60 s after 120 000.
    expect(first[3]?.retryAfterMs).toBe(60_000);
    clock.advance(60_000);
    expect((await limiter.tryAcquire("k")).allowed).toBe(true);
    // A reset reaches the fallback, even though Redis does not answer it.
    await expect(limiter.reset("k")).rejects.toThrow(/timeoutMs/);
    const after = await limiter.peek("k");
    expect(after.failure?.policy).toBe("fallback");
    expect(after.remaining).toBe(2);
    expect(() => new RedisStore({ client, onError: { fallback: {} } as never })).toThrow(
      /onError.fallback` must be a Store/,
    );
    expect(() => new RedisStore({ client, onError: { fallback, share: 2 } as never })).toThrow(
      /unknown `onError` option `share`/,
    );
  });
});

/**
 * What the suites that restart, flush or refuse their own Redis processes share
 * (test/redis/faults.test.ts, test/redis/functions.test.ts): cleanups run after each test, a
 * redis-server of the test's own, ioredis clients that leave failing to the store, and the
 * "a flush mid-run is absorbed, nothing counted twice" workload.
 */
import { Redis } from "ioredis";
import { createLimiter, ManualClock, type Store } from "sluice";
import { afterEach, expect } from "vitest";
import { type OwnedRedis, startOwnedRedis } from "./redis-server.ts";

/** The kit of one suite: register it at the top level of the file (it adds an afterEach). */
export interface OwnedRedisKit {
  /** Run in reverse order after each test (and whenever the suite calls {@link runCleanups}). */
  readonly cleanups: Array<() => unknown>;
  /** Runs and forgets the cleanups registered so far. */
  runCleanups(): Promise<void>;
  /** A redis-server of this test's own (stopped after it). */
  ownRedis(): Promise<OwnedRedis>;
  /**
   * An ioredis client (disconnected after the test). `maxRetriesPerRequest: null` keeps ioredis
   * from failing commands on its own schedule: the store's timeout is what bounds each check.
   */
  ioredis(url: string, options?: Record<string, unknown>): Redis;
}

/** Makes the kit and registers its afterEach. */
export function ownedRedisKit(): OwnedRedisKit {
  const cleanups: Array<() => unknown> = [];
  const runCleanups = async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  afterEach(runCleanups);
  return {
    cleanups,
    runCleanups,
    async ownRedis() {
      const server = await startOwnedRedis();
      if (server === undefined) throw new Error("redis-server could not be started");
      cleanups.push(() => server.dispose());
      return server;
    },
    ioredis(url, options = {}) {
      const client = new Redis(url, { maxRetriesPerRequest: null, ...options });
      client.on("error", () => {});
      cleanups.push(() => client.disconnect());
      return client;
    },
  };
}

/**
 * 60 rounds of two checks at once (so a fault also hits batched calls) on a fixed window of 40,
 * `between(i)` before each round (a SCRIPT or FUNCTION FLUSH, say). Every check is decided by
 * Redis; returns how many were allowed (40 when nothing was counted twice or lost), and checks
 * the key is spent.
 */
export async function spendThroughFaults(store: Store, between: (i: number) => Promise<unknown>): Promise<number> {
  const limiter = createLimiter(
    { algorithm: "fixed-window", limit: 40, windowMs: 60_000 },
    { store, clock: new ManualClock(5_000) },
  );
  let allowed = 0;
  for (let i = 0; i < 60; i++) {
    await between(i);
    for (const d of await Promise.all([limiter.tryAcquire("k"), limiter.tryAcquire("k")])) {
      expect(d.failure).toBeUndefined();
      if (d.allowed) allowed++;
    }
  }
  const peek = await limiter.peek("k");
  expect(peek.allowed).toBe(false);
  expect(peek.remaining).toBe(0);
  return allowed;
}

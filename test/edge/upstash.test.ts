// RedisStore over `@upstash/redis` (Redis over HTTP, the edge runtimes' client): the real client
// talks through a local bridge speaking Upstash's REST protocol (upstash-bridge.ts) to a real
// Redis, and must make the decisions the memory store makes on the parity traces (every
// algorithm, composites, bans, spec changes), share state with an ioredis store, load the
// script on NOSCRIPT, and refuse the deny cache it cannot keep.
import { Redis as Upstash } from "@upstash/redis";
import { Redis } from "ioredis";
import { ArgumentError, createLimiter, ManualClock, StoreError } from "sluice";
import { type RedisClientLike, RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { within } from "../support/poll.ts";
import { PARITY_RULES, runParityTrace } from "../support/redis-parity.ts";
import { pureStore } from "../support/redis-pure-store.ts";
import {
  findRedis,
  noRedis,
  type SharedRedis,
  startOwnedRedis,
  uniquePrefix,
  WORK_BOUND_MS,
} from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("Upstash bridge");

/** An @upstash/redis client on the bridge, as an edge function would make it (no retries: a test sees failures). */
function upstashClient(bridge: UpstashBridge, token = bridge.token): Upstash {
  return new Upstash({ url: bridge.url, token, retry: false, enableTelemetry: false });
}

/** An Upstash client typed as the store's option (the public type `RedisClientLike` includes it). */
const asClient = (c: Upstash): RedisClientLike => c;

describe.skipIf(redis === undefined)("RedisStore with @upstash/redis", () => {
  let bridge: UpstashBridge;
  let io: Redis;

  beforeAll(async () => {
    bridge = await startUpstashBridge(redis?.url ?? "");
    io = new Redis(redis?.url ?? "", {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
    });
    await io.connect();
  });
  afterAll(async () => {
    await bridge?.close();
    io?.disconnect();
    await redis?.owned?.dispose();
  });

  it("is told apart from ioredis (it has evalsha and del too) and decides through EVALSHA over HTTP", async () => {
    const client = upstashClient(bridge);
    const clock = new ManualClock(1_800_000_000_000);
    const store = new RedisStore({
      timeoutMs: WORK_BOUND_MS,
      client: asClient(client),
      prefix: uniquePrefix("upstash-basic"),
    });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, { store, clock });
    const before = bridge.served.get("EVALSHA") ?? 0;
    expect((await limiter.tryAcquire("u")).allowed).toBe(true);
    expect(await limiter.tryAcquire("u")).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.tryAcquire("u")).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    expect((bridge.served.get("EVALSHA") ?? 0) - before).toBeGreaterThanOrEqual(3);
    await limiter.reset("u");
    expect(await limiter.tryAcquire("u")).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.cachedDenials).toBe(0);
  });

  it("shares state with an ioredis store on the same prefix and name", async () => {
    const prefix = uniquePrefix("upstash-shared");
    const clock = new ManualClock(1_800_000_000_000);
    const spec = { algorithm: "sliding-log", limit: 3, windowMs: 10_000 } as const;
    const viaHttp = createLimiter(spec, {
      store: new RedisStore({ timeoutMs: WORK_BOUND_MS, client: asClient(upstashClient(bridge)), prefix }),
      clock,
      name: "shared",
    });
    const viaTcp = createLimiter(spec, {
      store: new RedisStore({ timeoutMs: WORK_BOUND_MS, client: io, prefix, denyCache: false }),
      clock,
      name: "shared",
    });
    expect(await viaHttp.tryAcquire("k", 2)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await viaTcp.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 0 });
    expect((await viaHttp.tryAcquire("k")).allowed).toBe(false);
  });

  it("loads the script with EVAL when the server answers NOSCRIPT", async () => {
    const owned = await startOwnedRedis();
    if (owned === undefined) {
      // No redis-server binary to start a fresh one: the shared server may already hold the script.
      if (process.env.CI) throw new Error("redis-server is missing under CI: the NOSCRIPT path cannot be checked");
      console.warn("SKIPPED: NOSCRIPT over the Upstash bridge needs a redis-server binary to start a fresh server");
      return;
    }
    const fresh = await startUpstashBridge(owned.url);
    try {
      const store = new RedisStore({
        timeoutMs: WORK_BOUND_MS,
        client: asClient(upstashClient(fresh)),
        prefix: uniquePrefix("upstash-noscript"),
      });
      const limiter = createLimiter(
        { algorithm: "gcra", limit: 3, periodMs: 1000 },
        { store, clock: new ManualClock(0) },
      );
      expect(await limiter.tryAcquire("x")).toMatchObject({ allowed: true, remaining: 2 });
      expect(fresh.served.get("EVALSHA")).toBe(1);
      expect(fresh.served.get("EVAL")).toBe(1);
      expect((await limiter.tryAcquire("x")).remaining).toBe(1);
      expect(fresh.served.get("EVALSHA")).toBe(2);
      expect(fresh.served.get("EVAL")).toBe(1);
    } finally {
      await fresh.close();
      await owned.dispose();
    }
  });

  it("refuses a deny cache asked for explicitly, and keeps it off by default (no subscription over REST)", async () => {
    const client = asClient(upstashClient(bridge));
    expect(() => new RedisStore({ timeoutMs: WORK_BOUND_MS, client, denyCache: true })).toThrow(ArgumentError);
    expect(() => new RedisStore({ timeoutMs: WORK_BOUND_MS, client, denyCache: { maxEntries: 10 } })).toThrow(
      /denyCache.*subscribe/,
    );
    const store = new RedisStore({ timeoutMs: WORK_BOUND_MS, client, prefix: uniquePrefix("upstash-nocache") });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      { store, clock: new ManualClock(0) },
    );
    await limiter.tryAcquire("d");
    const before = bridge.served.get("EVALSHA") ?? 0;
    for (let i = 0; i < 3; i++) expect((await limiter.tryAcquire("d")).allowed).toBe(false);
    // Every repeat of the denial asked Redis: nothing was answered locally.
    expect((bridge.served.get("EVALSHA") ?? 0) - before).toBe(3);
    expect(store.denyCacheHits).toBe(0);
    expect(bridge.served.has("SUBSCRIBE")).toBe(false);
  });

  it("a reset made over HTTP reaches the deny cache of an ioredis store sharing the Redis", async () => {
    const prefix = uniquePrefix("upstash-invalidate");
    const clock = new ManualClock(1_800_000_000_000);
    const spec = { algorithm: "fixed-window", limit: 2, windowMs: 60_000 } as const;
    const tcpStore = new RedisStore({ timeoutMs: WORK_BOUND_MS, client: io, prefix });
    const viaTcp = createLimiter(spec, { store: tcpStore, clock, name: "login" });
    const viaHttp = createLimiter(spec, {
      store: new RedisStore({ timeoutMs: WORK_BOUND_MS, client: asClient(upstashClient(bridge)), prefix }),
      clock,
      name: "login",
    });
    try {
      expect((await viaHttp.tryAcquire("victim", 2)).allowed).toBe(true);
      // Deny through the TCP store until its cache (subscribed on the first denial) holds the denial.
      for (const waiting = within(); waiting() && tcpStore.cachedDenials === 0; ) {
        expect((await viaTcp.tryAcquire("victim")).allowed).toBe(false);
        if (tcpStore.cachedDenials === 0) await new Promise((r) => setTimeout(r, 5));
      }
      expect(tcpStore.cachedDenials).toBe(1);
      const publishes = bridge.served.get("PUBLISH") ?? 0;
      await viaHttp.reset("victim");
      expect(bridge.served.get("PUBLISH")).toBe(publishes + 1);
      // Bounded wait on real time for the pub/sub delivery (not rate-limit time).
      for (const waiting = within(); waiting() && tcpStore.cachedDenials > 0; )
        await new Promise((r) => setTimeout(r, 5));
      expect(tcpStore.cachedDenials).toBe(0);
      expect(await viaTcp.tryAcquire("victim")).toMatchObject({ allowed: true, remaining: 1 });
    } finally {
      await tcpStore.close();
    }
  });

  it("answers by onError when the endpoint refuses the token", async () => {
    const store = new RedisStore({
      timeoutMs: WORK_BOUND_MS,
      client: asClient(upstashClient(bridge, "wrong-token")),
      prefix: uniquePrefix("upstash-auth"),
      onError: "throw",
      breaker: false,
    });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { store });
    await expect(limiter.tryAcquire("z")).rejects.toBeInstanceOf(StoreError);
    await expect(limiter.tryAcquire("z")).rejects.toThrow(/Unauthorized/);
  });

  // One seed per oracle (the ioredis and node-redis suites search the Lua deeper): here it is
  // the transport under test, on every algorithm, composite, ban and spec change.
  for (const rule of PARITY_RULES) {
    it(`parity with the memory store: ${rule.name}`, async () => {
      const client = asClient(upstashClient(bridge));
      const store = () =>
        new RedisStore({
          timeoutMs: WORK_BOUND_MS,
          client,
          prefix: uniquePrefix("upstash-parity"),
          // A ManualClock runs slower than real time: keep keys past their (manual) fresh time.
          expiryGraceMs: 600_000,
        });
      const seed = 7919 + rule.name.length;
      const forward = await runParityTrace(rule, store(), seed, 150);
      const pure = await runParityTrace(rule, store(), seed * 13, 150, {
        oracle: pureStore(),
        stepBack: true,
        keepsRecords: true,
      });
      const compared = forward.compared + pure.compared;
      expect(compared).toBeGreaterThan(2 * 150 * 0.8);
      expect(forward.refunded + pure.refunded).toBeGreaterThan(0);
      // Bans, and blocks on every rule (src/core/block.ts).
      expect(forward.banned + pure.banned, "banned decisions seen").toBeGreaterThan(0);
    });
  }
});

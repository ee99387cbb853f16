// Faults against real Redis processes started here (never the shared 6379): script cache
// flushes, restarts, a stopped server and a port that never answers, under every `onError`
// policy; key expiry and its repair. Settle times are asserted loosely (timeoutMs + 1.5 s).
import type { Redis } from "ioredis";
import { createClient } from "redis";
import { createLimiter, type Decision, ManualClock, StoreError } from "sluice";
import { type OnError, RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { blackHole } from "../support/net.ts";
import { ownedRedisKit, spendThroughFaults } from "../support/owned-redis-kit.ts";
import { within } from "../support/poll.ts";
import { canStartRedis, uniquePrefix } from "../support/redis-server.ts";

const canStart = await canStartRedis("faults");

const TIMEOUT = 300;
const MARGIN = 1500;
const { cleanups, runCleanups, ownRedis, ioredis } = ownedRedisKit();

/** Resolves once an ioredis client is connected (needed when its offline queue is off). */
async function ready(client: Redis): Promise<void> {
  if (client.status !== "ready") await new Promise((r) => client.once("ready", r));
}

/** Runs `check` and measures how long it took to settle. */
async function timed<T>(check: () => Promise<T>): Promise<{ value: T | undefined; error: unknown; ms: number }> {
  const started = performance.now();
  try {
    const value = await check();
    return { value, error: undefined, ms: performance.now() - started };
  } catch (error) {
    return { value: undefined, error, ms: performance.now() - started };
  }
}

/** A TCP port that accepts connections and never answers (closed after the test). */
async function hole(): Promise<number> {
  const h = await blackHole();
  cleanups.push(h.close);
  return h.port;
}

const SPEC = { algorithm: "fixed-window", limit: 5, windowMs: 60_000 } as const;

describe.skipIf(!canStart)("Redis faults", () => {
  afterAll(runCleanups);

  it("SCRIPT FLUSH mid-run is absorbed, with nothing counted twice (ioredis and node-redis)", async () => {
    const server = await ownRedis();
    const admin = ioredis(server.url);
    const node = createClient({ url: server.url });
    await node.connect();
    cleanups.push(() => node.close());
    for (const client of [ioredis(server.url), node]) {
      const store = new RedisStore({ client, prefix: uniquePrefix("flush") });
      expect(await spendThroughFaults(store, (i) => (i % 7 === 0 ? admin.script("FLUSH") : Promise.resolve()))).toBe(
        40,
      );
    }
  });

  it("a Redis restart mid-run: checks fail by policy while it is down, then recover; nothing counted twice", async () => {
    const server = await ownRedis();
    const client = ioredis(server.url, { enableOfflineQueue: false, retryStrategy: () => 50 });
    await ready(client);
    const store = new RedisStore({ client, prefix: uniquePrefix("restart"), timeoutMs: TIMEOUT, breaker: false });
    const clock = new ManualClock(10_000);
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 20, windowMs: 60_000 }, { store, clock });
    for (let i = 0; i < 5; i++) expect((await limiter.tryAcquire("k")).failure).toBeUndefined();
    await server.stop();
    const down = await timed(() => limiter.tryAcquire("k"));
    expect(down.value?.failure?.policy).toBe("deny");
    expect(down.value?.allowed).toBe(false);
    expect(down.ms).toBeLessThan(TIMEOUT + MARGIN);
    await server.start();
    // Recovery: poll until checks are decided by Redis again (bounded), counting what it admits.
    let admitted = 0;
    let decided = 0;
    for (const waiting = within(); waiting() && decided < 30; ) {
      const d = await limiter.tryAcquire("k");
      if (d.failure !== undefined) {
        await new Promise((r) => setTimeout(r, 25));
        continue;
      }
      decided++;
      if (d.allowed) admitted++;
    }
    expect(decided).toBe(30);
    // The restarted server (no persistence) had a fresh script cache and no state: the script
    // reloaded itself (NOSCRIPT → EVAL) and each admitted request was counted exactly once.
    expect(admitted).toBe(20);
    expect((await limiter.peek("k")).remaining).toBe(0);
  });

  const policies: Array<{ name: string; onError: () => OnError; expectDecision: (d: Decision) => void }> = [
    {
      name: "deny",
      onError: () => "deny",
      expectDecision: (d) => {
        expect(d.allowed).toBe(false);
        expect(d.failure?.policy).toBe("deny");
        expect(Number.isFinite(d.retryAfterMs) && d.retryAfterMs > 0 && d.retryAfterMs <= 1000).toBe(true);
        expect(d.failure?.error).toBeInstanceOf(StoreError);
      },
    },
    {
      name: "allow",
      onError: () => "allow",
      expectDecision: (d) => {
        expect(d.allowed).toBe(true);
        expect(d.failure?.policy).toBe("allow");
      },
    },
    {
      name: "a fallback limiter",
      onError: () => createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, new ManualClock(0)),
      expectDecision: (d) => {
        expect(d.failure?.policy).toBe("fallback");
        expect(d.limit).toBe(1);
      },
    },
  ];

  for (const target of ["a stopped Redis", "a port that never answers"] as const) {
    for (const clientKind of ["ioredis", "node-redis"] as const) {
      it(`${target} (${clientKind}): every policy settles within timeoutMs with its decision`, async () => {
        let port: number;
        if (target === "a stopped Redis") {
          const server = await ownRedis();
          port = server.port;
          await server.stop();
        } else {
          port = await hole();
        }
        const url = `redis://127.0.0.1:${port}`;
        let client: ConstructorParameters<typeof RedisStore>[0]["client"];
        if (clientKind === "ioredis") {
          client = ioredis(url);
        } else {
          const node = createClient({ url, socket: { reconnectStrategy: 50, connectTimeout: 200 } });
          node.on("error", () => {});
          // Not awaited: the server is down or silent, so connecting never completes.
          node.connect().catch(() => {});
          cleanups.push(() => node.destroy());
          client = node;
        }
        for (const policy of policies) {
          const store = new RedisStore({ client, prefix: "p:", timeoutMs: TIMEOUT, onError: policy.onError() });
          const limiter = createLimiter(SPEC, { store, clock: new ManualClock(0) });
          const results = await Promise.all(Array.from({ length: 8 }, () => timed(() => limiter.tryAcquire("k"))));
          for (const r of results) {
            expect(r.error, policy.name).toBeUndefined();
            expect(r.ms, policy.name).toBeLessThan(TIMEOUT + MARGIN);
            policy.expectDecision(r.value as Decision);
          }
        }
        const store = new RedisStore({ client, prefix: "p:", timeoutMs: TIMEOUT, onError: "throw" });
        const limiter = createLimiter(SPEC, { store, clock: new ManualClock(0) });
        const thrown = await timed(() => limiter.tryAcquire("k"));
        expect(thrown.error).toBeInstanceOf(StoreError);
        expect((thrown.error as StoreError).code).toMatch(/^ERR_STORE(_TIMEOUT)?$/);
        expect((thrown.error as StoreError).cause ?? (thrown.error as StoreError).code).toBeDefined();
        expect(thrown.ms).toBeLessThan(TIMEOUT + MARGIN);
        const reset = await timed(() => limiter.reset("k"));
        expect(reset.error).toBeInstanceOf(StoreError);
        expect(reset.ms).toBeLessThan(TIMEOUT + MARGIN);
      });
    }
  }

  it("the circuit breaker answers at once while open, probes, and closes once Redis is back", async () => {
    const server = await ownRedis();
    const client = ioredis(server.url, { enableOfflineQueue: false, retryStrategy: () => 50 });
    await ready(client);
    const store = new RedisStore({
      client,
      prefix: uniquePrefix("breaker"),
      timeoutMs: TIMEOUT,
      breaker: { failures: 3, coolDownMs: 200 },
    });
    const limiter = createLimiter(SPEC, { store, clock: new ManualClock(0) });
    expect((await limiter.tryAcquire("k")).failure).toBeUndefined();
    await server.stop();
    for (let i = 0; i < 3; i++) expect((await limiter.tryAcquire("k")).failure?.policy).toBe("deny");
    expect(store.circuitOpen).toBe(true);
    const open = await limiter.tryAcquire("k");
    expect(open.failure?.error.message).toMatch(/circuit breaker is open/);
    await server.start();
    let recovered: Decision | undefined;
    for (let i = 0; i < 100; i++) {
      recovered = await limiter.tryAcquire("k");
      if (recovered.failure === undefined) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(recovered?.failure).toBeUndefined();
    expect(store.circuitOpen).toBe(false);
  });

  it("a fallback can be built per rule by a function", async () => {
    const port = await hole();
    const client = ioredis(`redis://127.0.0.1:${port}`);
    const seen: string[] = [];
    const store = new RedisStore({
      client,
      timeoutMs: TIMEOUT,
      onError: (rule) => {
        seen.push(rule.id);
        return createLimiter(
          rule.rule.members.map((a) => a.spec),
          new ManualClock(0),
        );
      },
    });
    const limiter = createLimiter(SPEC, { store, clock: new ManualClock(0), name: "login" });
    const ds = [await limiter.tryAcquire("k"), await limiter.tryAcquire("k")];
    expect(ds.map((d) => d.failure?.policy)).toEqual(["fallback", "fallback"]);
    expect(ds.map((d) => d.remaining)).toEqual([4, 3]);
    expect(seen).toEqual(["name:login"]);
  });

  it("every key expires when its state becomes fresh, and a lost expiry is repaired", async () => {
    const server = await ownRedis();
    const client = ioredis(server.url);
    const prefix = uniquePrefix("ttl");
    // One prefix per limiter, so each one's key can be told apart.
    const store = (name: string) => new RedisStore({ client, prefix: `${prefix}${name}:` });
    // Expiries are tens of seconds of real time (Redis counts them on its own clock), each apart
    // from its window and from the others: sub-second ones (750 ms, 250 ms) could pass on a loaded
    // machine before the keys are read, and the key would be gone, not wrong. Every bound below
    // allows 10 s of real time between the write and the read, as the log's always has.
    const clock = new ManualClock(1_035_000);
    const fixed = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      { store: store("f"), clock },
    );
    const bucket = createLimiter(
      { algorithm: "token-bucket", capacity: 2, refillPerSecond: 0.04 },
      { store: store("t"), clock },
    );
    const log = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 90_000 }, { store: store("l"), clock });
    await fixed.tryAcquire("a"); // window 1_020_000 + 60 s: fresh in 45 s (not the window's 60 s)
    await bucket.tryAcquire("a"); // 1 token short at 0.04/s: full again in 25 s (not 2 tokens' 50 s)
    await log.tryAcquire("a"); // newest entry + 90 s
    const keys = await client.keys(`${prefix}*`);
    expect(keys.length).toBe(3);
    const keyOf = (name: string) => keys.find((k) => k.startsWith(`${prefix}${name}:`)) as string;
    const ttl = async (name: string) => client.pttl(keyOf(name));
    const f = await ttl("f");
    const t = await ttl("t");
    const l = await ttl("l");
    expect(f).toBeGreaterThan(35_000);
    expect(f).toBeLessThanOrEqual(45_000);
    expect(t).toBeGreaterThan(15_000);
    expect(t).toBeLessThanOrEqual(25_000);
    expect(l).toBeGreaterThan(80_000);
    expect(l).toBeLessThanOrEqual(90_000);
    // Someone removes the expiry; the next (denied) check puts it back.
    const fixedKey = keyOf("f");
    await client.persist(fixedKey);
    expect(await client.pttl(fixedKey)).toBe(-1);
    expect((await fixed.tryAcquire("a")).allowed).toBe(false);
    const repaired = await client.pttl(fixedKey);
    expect(repaired).toBeGreaterThan(35_000);
    expect(repaired).toBeLessThanOrEqual(45_000);
  });

  it("a foreign value at a key fails that check alone, by policy, not the batch", async () => {
    const server = await ownRedis();
    const client = ioredis(server.url);
    const prefix = uniquePrefix("foreign");
    const store = new RedisStore({ client, prefix });
    const clock = new ManualClock(0);
    const limiter = createLimiter(SPEC, { store, clock });
    await limiter.tryAcquire("bad");
    const [badKey] = await client.keys(`${prefix}*`);
    await client.del(badKey as string);
    await client.hset(badKey as string, "x", "1");
    const [good, bad] = await Promise.all([limiter.tryAcquire("good"), limiter.tryAcquire("bad")]);
    expect(good.failure).toBeUndefined();
    expect(good.allowed).toBe(true);
    expect(bad.failure?.policy).toBe("deny");
    expect(bad.failure?.error.message).toMatch(/WRONGTYPE/);
  });

  it("foreign values mid-batch fail those checks alone: every check around them is decided once", async () => {
    const server = await ownRedis();
    const client = ioredis(server.url);
    const prefix = uniquePrefix("foreign-mid");
    const store = new RedisStore({ client, prefix, denyCache: false });
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    const limiter = createLimiter(SPEC, { store, clock });
    // Two keys hold hashes (the script cannot read them), placed between keys it can.
    for (const key of ["bad1", "bad2"]) {
      await limiter.tryAcquire(key);
      const [found] = await client.keys(`${prefix}*${key}`);
      await client.del(found as string);
      await client.hset(found as string, "x", "1");
    }
    const keys = ["a", "bad1", "b", "c", "bad2", "d"];
    // One uniform batch (same rule, op, cost and now): the script's hot path.
    const decisions = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    for (const [i, key] of keys.entries()) {
      const d = decisions[i] as Decision;
      if (key.startsWith("bad")) {
        expect(d.failure?.error.message, key).toMatch(/WRONGTYPE/);
      } else {
        expect(d.failure, key).toBeUndefined();
        expect(d.remaining, key).toBe(SPEC.limit - 1);
      }
    }
    // Each good key was counted exactly once (a peek reports what one more unit would leave).
    for (const key of ["a", "b", "c", "d"]) expect((await limiter.peek(key)).remaining, key).toBe(SPEC.limit - 2);
  });
});

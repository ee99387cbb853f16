// rate-limiter-flexible's calls (penalty, block, get) on Redis: the Lua twin decides them as the
// MemoryStore does. Seeded traces of checks, peeks, refunds, resets, penalties, blocks and gets
// over every algorithm, a composite and banned rules (blocks on rules with and without a ban), at an injected clock (base 0 and today's
// epoch): every answer deep-equal, `null` gets included.
import { createLimiter, type LimitSpec, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";
import { RLF_TRACES, runRlfTrace } from "../support/rlf-trace.ts";

const redis = await standaloneRedis("rate-limiter-flexible's calls");

describe.skipIf(redis === undefined)("penalty, block and get: Redis = MemoryStore", () => {
  const clients = useStandaloneClients(redis);

  // The traces live in test/support/rlf-trace.ts (the Lua mutation run reruns them). Redis
  // expires keys in real time, the trace's clock is a ManualClock: with the default grace (0) a
  // key whose state is needed for 50 more clock-ms could expire when a loaded machine spends 50
  // real ms between two events, and Redis would then decide on a fresh key. The grace keeps
  // real time out of the comparison (the TTL's own bound is checked below).
  for (const { seed, base } of RLF_TRACES) {
    it(`seed ${seed}, base ${base}: every answer deep-equal`, () => runRlfTrace(clients.io, seed, base, 600_000));
  }

  it("with the deny cache on, penalty, block and get still reach Redis", async () => {
    const clock = new ManualClock(1.8e12);
    const store = new RedisStore({ client: clients.io, prefix: uniquePrefix("rlf-cache") });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 10_000 },
      { clock, store, ban: { after: 100, withinMs: 1000, forMs: 1000 } },
    );
    await limiter.tryAcquire("k");
    expect(await limiter.tryAcquire("k")).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
    // A long block, then a shorter one: the second answers (and holds) its own time left.
    expect(await limiter.block("k", 60_000)).toMatchObject({ banned: true, retryAfterMs: 60_000 });
    expect(await limiter.tryAcquire("k")).toMatchObject({ banned: true, retryAfterMs: 60_000 });
    expect(await limiter.block("k", 500)).toMatchObject({ banned: true, retryAfterMs: 10_000 });
    clock.set(1.8e12 + 500);
    expect(await limiter.tryAcquire("k")).toMatchObject({ allowed: false, retryAfterMs: 9_500 });
    expect(await limiter.tryAcquire("k")).not.toHaveProperty("banned");
    // A penalty on a key the cache holds as denied still takes its units in Redis.
    await limiter.penalty("k", 5);
    expect(await limiter.get("k")).toMatchObject({ allowed: false, remaining: 0 });
    await limiter.reset("k");
    expect(await limiter.get("k")).toBeNull();
    expect(await limiter.get("never-seen")).toBeNull();
  });

  it("a block without a ban: another store sees it at once, and only a blocked key's record changes form", async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    const prefix = uniquePrefix("rlf-block");
    // One emission every 2.4 s: a record lives that long in real time (no expiry grace here),
    // longer than a loaded machine stalls between two of these steps.
    const spec: LimitSpec = { algorithm: "gcra", limit: 5, periodMs: 12_000 };
    // Two stores on two connections, each with its deny cache: two processes' view of one Redis.
    const a = createLimiter(spec, { clock, name: "b", store: new RedisStore({ client: clients.io, prefix }) });
    const b = createLimiter(spec, { clock, name: "b", store: new RedisStore({ client: clients.node, prefix }) });
    await a.tryAcquire("k");
    await a.tryAcquire("plain");
    const keys = async () => (await clients.io.keys(`${prefix}*`)).sort();
    const [k, plain] = await Promise.all(["k", "plain"].map(async (x) => (await keys()).find((y) => y.endsWith(x))));
    expect(await clients.io.type(k as string)).toBe("string");
    const blockedAt = performance.now();
    expect(await a.block("k", 60_000)).toMatchObject({ banned: true, retryAfterMs: 60_000 });
    expect(await clients.io.type(k as string)).toBe("hash");
    expect(await clients.io.type(plain as string)).toBe("string");
    expect(await b.tryAcquire("k")).toMatchObject({ allowed: false, banned: true, retryAfterMs: 60_000 });
    expect(await b.tryAcquire("plain")).toMatchObject({ allowed: true, remaining: 3 });
    // A refund does not lift it; get reports it; the block outlasts the record's own expiry.
    expect(await b.refund("k")).toMatchObject({ banned: true });
    expect(await b.get("k")).toMatchObject({ banned: true, retryAfterMs: 60_000 });
    // Its own expiry would be ~2.4 s; the block's real-time TTL is 60 s less the real time spent
    // since (a loaded machine may spend seconds here: the bound follows it).
    const ttl = await clients.io.pttl(k as string);
    expect(ttl).toBeGreaterThan(Math.min(50_000, 60_000 - (performance.now() - blockedAt) - 10));
    clock.set(Date.UTC(2026, 11, 1) + 60_000);
    expect(await b.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 4 });
    expect(await clients.io.type(k as string)).toBe("string");
    // A reset clears a block at once, everywhere.
    await a.block("k", 60_000);
    expect(await b.tryAcquire("k")).toMatchObject({ banned: true });
    await b.reset("k");
    expect(await a.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 4 });
  });
});

// Leases on RedisStore without an injected clock: receipts are Redis TIME readings (the instant
// the script decided at, stamped by the store), release() and renew() name them, and the
// record expires with its newest lease, as every record does.
import { createLimiter, type Decision } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("leases on Redis TIME");

describe.skipIf(redis === undefined)("leases on Redis server time", () => {
  const clients = useStandaloneClients(redis);

  it("receipts are Redis TIME instants; release() frees the slot, renew() moves the receipt; keys expire", async () => {
    const prefix = uniquePrefix("lease-time");
    const store = new RedisStore({ client: clients.io, prefix });
    const limiter = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 5000 }, { store, name: "jobs" });
    const [time] = (await clients.io.time()) as unknown as [string, string];
    const a = await limiter.tryAcquire("k");
    const b = await limiter.tryAcquire("k");
    expect(typeof a.at).toBe("number");
    // The server's clock (whole ms), not this process's: within a few seconds of the TIME read above.
    expect(Math.abs((a.at as number) - Number(time) * 1000)).toBeLessThan(3000);
    expect(Number.isInteger(a.at)).toBe(true);
    const refused = await limiter.tryAcquire("k");
    expect(refused.allowed).toBe(false);
    expect(refused.release).toBeUndefined();
    expect(refused.retryAfterMs).toBeGreaterThan(4000); // until the oldest lease expires
    const released = await (a.release as () => Promise<Decision>)();
    expect(released.allowed).toBe(true);
    expect(await (a.release as () => Promise<Decision>)()).toBe(released); // acts once
    const c = await limiter.tryAcquire("k");
    expect(c.allowed).toBe(true);
    // The key expires when its newest lease would: a crashed holder leaves nothing behind.
    const [key] = await clients.io.keys(`${prefix}*`);
    const ttl = await clients.io.pttl(key as string);
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const renewed = await (b.renew as () => Promise<Decision>)();
    expect(renewed.allowed).toBe(true);
    expect(renewed.at as number).toBeGreaterThan(b.at as number);
    // The old receipt names nothing now; the renewed one is what b.release() gives back.
    await limiter.release("k", { at: b.at as number });
    expect((await limiter.peek("k")).allowed).toBe(false);
    await (b.release as () => Promise<Decision>)();
    await (c.release as () => Promise<Decision>)();
    expect((await limiter.peek("k")).remaining).toBe(1); // both slots free: a peek of one unit leaves 1
    // Nothing held: the record is a fresh key's, written with the shortest expiry (1 ms), so
    // Redis drops it at once (within that ms, it may still be listed).
    for (const left of await clients.io.keys(`${prefix}*`)) expect(await clients.io.pttl(left)).toBeLessThanOrEqual(1);
  });

  it("a rule without a concurrency member keeps its decisions as they were: no receipt on Redis TIME, no handles", async () => {
    const store = new RedisStore({ client: clients.io, prefix: uniquePrefix("lease-none") });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, { store, name: "plain" });
    const d = await limiter.tryAcquire("k");
    expect(d.at).toBeUndefined();
    expect(d.release).toBeUndefined();
    await expect(limiter.release("k", { at: 1 })).rejects.toThrow(/needs a rule with a concurrency member/);
  });
});

// Redis Sentinel as a deployment, with real processes (test/support/redis-topologies.ts): an
// ioredis client given the sentinels, used through RedisStore. Checks work; then the master is
// killed with SIGKILL mid-load and the sentinels promote the replica. Asserted: every check
// settles within timeoutMs (+ a loose margin), by policy while there is no master; checks resume
// on the new master; no key admits more than its limit (so no acknowledged count was lost in
// replication). Measured and printed (not asserted): how long checks were denied.
import type { Redis } from "ioredis";
import { createLimiter, type Decision } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canStartRedis, uniquePrefix, WORK_BOUND_MS } from "../support/redis-server.ts";
import { startSentinel, type TestSentinel } from "../support/redis-topologies.ts";
import { sentinelClient } from "../support/sentinel-client.ts";

const canStart = await canStartRedis("Sentinel");

const TIMEOUT = 300;
const MARGIN = 1500;
// A bucket that refills ~nothing during the test: a key admits exactly `limit` in total.
const bucket = (capacity: number) => ({ algorithm: "token-bucket", capacity, refillPerSecond: 0.000001 }) as const;

describe.skipIf(!canStart)("Redis Sentinel (1 master, 1 replica, 3 sentinels)", () => {
  let sentinel: TestSentinel;
  let client: Redis;

  beforeAll(async () => {
    sentinel = (await startSentinel()) as TestSentinel;
    client = sentinelClient(sentinel.sentinelPorts);
    await client.connect();
  }, 60_000);

  afterAll(async () => {
    client?.disconnect();
    await sentinel?.dispose();
  });

  it("checks go to the master the sentinels name", async () => {
    expect(await sentinel.masterPort()).toBe(sentinel.master.port);
    // A work-based deadline: the first check also loads the script, and a slow answer on a
    // loaded machine is not what this case is about (the failover case below tests deadlines).
    const store = new RedisStore({ client, prefix: uniquePrefix("sentinel"), timeoutMs: WORK_BOUND_MS });
    const limiter = createLimiter(bucket(3), { store, name: "basic" });
    const seen: Decision[] = [];
    for (let i = 0; i < 4; i++) seen.push(await limiter.tryAcquire("k"));
    expect(seen.map((d) => d.failure)).toEqual([undefined, undefined, undefined, undefined]);
    expect(seen.map((d) => d.allowed)).toEqual([true, true, true, false]);
  });

  it("kill -9 of the master mid-load: checks settle by policy within timeoutMs, then resume on the promoted replica", async () => {
    const limit = 400;
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    const store = new RedisStore({ client, prefix: uniquePrefix("sentinel-failover"), timeoutMs: TIMEOUT });
    const limiter = createLimiter(bucket(limit), { store, name: "failover" });
    const admitted = new Map<string, number>(keys.map((k) => [k, 0]));
    let ackedAtKill: Map<string, number> | undefined;
    let killedAt = 0;
    let firstFailure = Number.POSITIVE_INFINITY;
    let lastFailure = 0;
    let failures = 0;
    let slowest = 0;
    let cleanRoundsAfterFailover = 0;
    const started = performance.now();
    // Bounded: at most 45 s of rounds of 20 concurrent checks.
    for (let round = 0; performance.now() - started < 45_000; round++) {
      if (round === 100) {
        // Redis replicates asynchronously: a count the replica has not received when the master
        // dies is lost with it (docs/redis.md). Under load the replica once lagged all 100 rounds
        // and a key admitted 500 of 400; WAIT (on the connection that wrote them) makes every
        // count so far acknowledged by the replica, which is what this test holds sluice to.
        expect(await client.call("WAIT", "1", String(WORK_BOUND_MS))).toBe(1);
        ackedAtKill = new Map(admitted);
        killedAt = performance.now();
        await sentinel.master.stop(); // SIGKILL
      }
      const results = await Promise.all(
        keys.map(async (key) => {
          const t0 = performance.now();
          const d: Decision = await limiter.tryAcquire(key);
          return { key, d, t0, ms: performance.now() - t0 };
        }),
      );
      let clean = true;
      for (const { key, d, t0, ms } of results) {
        slowest = Math.max(slowest, ms);
        if (d.failure !== undefined) {
          clean = false;
          failures++;
          expect(d.failure.policy).toBe("deny");
          expect(d.allowed).toBe(false);
          firstFailure = Math.min(firstFailure, t0);
          lastFailure = Math.max(lastFailure, t0 + ms);
        } else if (d.allowed) {
          admitted.set(key, (admitted.get(key) ?? 0) + 1);
        }
      }
      if (killedAt > 0 && clean && failures > 0) cleanRoundsAfterFailover++;
      else if (!clean) {
        cleanRoundsAfterFailover = 0;
        // Failed checks answer at once (no master, breaker open): pace the load, don't spin.
        await new Promise((r) => setTimeout(r, 10));
      }
      // Done once checks have run cleanly on the new master long enough to use every key up.
      if (cleanRoundsAfterFailover >= limit) break;
    }
    // Every check settled within its bound, even with no master at all.
    expect(slowest).toBeLessThan(TIMEOUT + MARGIN);
    // The sentinels promoted the replica, and checks resumed on it.
    expect(failures).toBeGreaterThan(0);
    expect(await sentinel.masterPort()).toBe(sentinel.replica.port);
    expect(cleanRoundsAfterFailover).toBeGreaterThanOrEqual(limit);
    // No key ever admitted more than its limit, across the failover.
    for (const key of keys) expect(admitted.get(key), key).toBeLessThanOrEqual(limit);
    // Every key was used up on the new master (its count there continued from the replica's copy).
    const after = await Promise.all(keys.map((key) => limiter.peek(key)));
    expect(after.map((d) => d.remaining)).toEqual(keys.map(() => 0));
    // Replication loss would show as admissions beyond the limit (the new master counting from a
    // stale copy); asserted above to be none here, on loopback, where the replica is never behind.
    console.log(
      `sentinel failover: checks denied by policy for ${Math.round(lastFailure - firstFailure)} ms ` +
        `(${failures} checks; master killed at +${Math.round(killedAt - started)} ms, first failure ` +
        `+${Math.round(firstFailure - killedAt)} ms after the kill); slowest check ${Math.round(slowest)} ms; ` +
        `admissions acknowledged before the kill ${[...(ackedAtKill ?? new Map()).values()].reduce((a, b) => a + b, 0)}, all still counted after it`,
    );
  }, 90_000);
});

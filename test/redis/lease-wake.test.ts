// acquire() on a RedisStore: a release in this process wakes the waiter at once; the poll (every
// 25 ms, on the limiter's clock) is only for releases by other processes. With a ManualClock that
// never moves, only the wake can hand the slot over.
import { createLimiter, type Decision, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";

const T = 1_765_000_000_000;
const redis = await standaloneRedis("lease wake");

describe.skipIf(redis === undefined)("acquire() on Redis is woken by releases in this process", () => {
  const clients = useStandaloneClients(redis);
  it("a release hands the slot to the waiter without the clock moving", async () => {
    const clock = new ManualClock(T);
    const store = new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("lease-wake"),
      expiryGraceMs: 600_000,
      timeoutMs: WORK_BOUND_MS,
    });
    const limiter = createLimiter({ algorithm: "concurrency", limit: 1, leaseMs: 60_000 }, { clock, store, name: "w" });
    const held = await limiter.tryAcquire("k");
    let got: Decision | undefined;
    const waiting = limiter.acquire("k").then((d) => (got = d));
    // The waiter has been refused at least once: its check is on Redis before the release.
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toBeUndefined();
    await (held.release as () => Promise<Decision>)();
    for (const more = within(); got === undefined && more(); ) await new Promise((r) => setTimeout(r, 10));
    expect(got?.allowed).toBe(true);
    await ((got as Decision).release as () => Promise<Decision>)();
    await waiting;
  });
});

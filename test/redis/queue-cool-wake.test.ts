// Issue 32: on Redis a late start refused during a cool-down (another process's job holds it) is
// woken by an event, as on the hosts: queue.lua records its owner ('cw') and, when the cool-down's
// job is released, PUBLISHes {"k", "f": 1} on that owner's channel (fleet-queue.ts → coolFreed).
// Its answered wait is only a fallback (the rest of the cool-down, at most 1 s). Before, queue.lua
// answered at most 50 ms and told no one: a late start polled with an EVALSHA every 50 ms for as
// long as the other job ran. Counted on a private redis-server (INFO commandstats), so no other
// test's calls count; the waiter retries as the runner does (runner.ts `#restamp`: at the store's
// wait, or at once when the store says the cool-down's job ended).
import { Redis } from "ioredis";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import type { FleetGrant, Restamped } from "../../src/core/fleet-queue.ts";
import type { RedisFleetQueue } from "../../src/stores/redis/fleet-queue.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis, uniquePrefix } from "../support/redis-server.ts";

const server: OwnedRedis | undefined = (await canStartRedis("queue cool wake")) ? await startOwnedRedis() : undefined;
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c();
  await server?.dispose();
});

/** The queue script's calls so far on the private server (EVALSHA, and EVAL after a NOSCRIPT). */
async function scriptCalls(client: Redis): Promise<number> {
  const info = await client.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval|fcall):calls=(\d+)/gm)) n += Number(m[1]);
  return n;
}

interface Owner {
  q: RedisFleetQueue;
  grants: FleetGrant[];
  /** Resolvers waiting for this owner's next `coolFreed`. */
  freed: Array<() => void>;
  heardFree: number;
}

async function owner(url: string, prefix: string): Promise<Owner> {
  const store = await RedisStore.connect({ url, prefix });
  const o: Owner = { q: undefined as unknown as RedisFleetQueue, grants: [], freed: [], heardFree: 0 };
  o.q = (await store.openFleetQueue({
    rate: { id: "cool-wake:rate", specs: [{ algorithm: "gcra", limit: 100, periodMs: 1000 } as never] },
    concurrency: undefined,
    ownerTtlMs: 5_000,
    liveness: "subscription",
    listener: {
      granted: (_key, gs) => o.grants.push(...gs),
      wake: () => {},
      relinked: () => {},
      coolFreed: () => {
        o.heardFree++;
        for (const r of o.freed.splice(0)) r();
      },
    },
  })) as RedisFleetQueue;
  closers.push(async () => {
    await o.q.close();
    await store.close();
  });
  return o;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe.skipIf(server === undefined)("a late start refused during a cool-down on Redis", () => {
  it("is woken when the cool-down's job is released: a few calls, not a poll", { timeout: 20_000 }, async () => {
    const url = (server as OwnedRedis).url;
    const prefix = uniquePrefix("queue-cool-wake");
    const stats = new Redis(url);
    closers.push(async () => void stats.disconnect());
    const a = await owner(url, prefix);
    const b = await owner(url, prefix);
    // A pause of 1 s: the key cools down until 2 s after it.
    await a.q.pause("k", 1_000);
    await sleep(1_050);
    // A's job is the cool-down's one job (granted during it, held until released).
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    expect(a.grants.map((g) => [g.id, g.cooling])).toEqual([["a1", true]]);
    // B's late start, retried as the runner does, while A's job runs (≥ 600 ms, then released).
    const before = await scriptCalls(stats);
    let refusals = 0;
    const waiter = (async (): Promise<Restamped> => {
      for (;;) {
        const m = await b.q.restamp("k", "b1", 1, undefined);
        if (!("waitMs" in m)) return m;
        refusals++;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(1, m.waitMs));
          b.freed.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
    })();
    await sleep(600);
    await a.q.release("k", "a1", false);
    const started = await waiter;
    const calls = (await scriptCalls(stats)) - before - 1; // less A's release
    console.log(`late start: ${calls} script calls, ${refusals} refusals, ${b.heardFree} coolFree heard`);
    // One refused, one after the word (before: one every 50 ms for 600 ms and more).
    expect(calls).toBeLessThanOrEqual(3);
    expect(b.heardFree).toBe(1);
    expect("cooling" in started && started.cooling).toBe(true); // it is now the cool-down's one job
  });
});

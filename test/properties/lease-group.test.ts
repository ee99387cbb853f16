// checkAll (several checks as one, all or nothing) with a leased rule in the group (SPEC §16:
// a refused group holds no lease). Found by the lease attack reading src/check-all.ts.
import { type Decision, ManualClock, MemoryStore, RateLimiterService, type Store } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";

const T = 1_765_000_000_000;
const lease = (limit: number, leaseMs: number) => ({ algorithm: "concurrency", limit, leaseMs }) as const;
const redis = await standaloneRedis("lease group");

/** The trace on `store`: [the refused group's answers allowed, then whether c admits]. */
async function group(store: Store): Promise<[boolean[], boolean]> {
  const clock = new ManualClock(T);
  const service = new RateLimiterService({ clock, store })
    .addRule("c", lease(1, 60_000))
    .addRule("r", { algorithm: "fixed-window", limit: 1, windowMs: 60_000 })
    .addRule("cr", [lease(1, 60_000), { algorithm: "sliding-log", limit: 5, windowMs: 60_000 }]);
  expect(((await service.check("r", "k")) as Decision).allowed).toBe(true);
  // A denied group: the denied item keeps its denial, the others get what a peek then says.
  const refused = (await service.checkAll([
    { rule: "c", key: "k" },
    { rule: "cr", key: "k" },
    { rule: "r", key: "k" },
  ])) as Decision[];
  clock.advance(1);
  const c = (await service.check("c", "k")) as Decision;
  const cr = (await service.check("cr", "k")) as Decision;
  // The composite's rate member was refunded too: 4 of 5 left after this check.
  expect(cr.parts?.[1]?.remaining).toBe(4);
  return [refused.map((d) => d.allowed), c.allowed && cr.allowed];
}

describe("checkAll with a leased rule", () => {
  const clients = useStandaloneClients(redis);
  // Expected: allowed (the refused group holds no lease). Got before the fix in
  // src/check-all.ts: denied for leaseMs: the group was rolled back with refund() only, and a
  // refund gives back rate units, never a lease (f0f7748); the rolled-back decisions carried no
  // release() either.
  it("MemoryStore: a refused group holds no lease", async () => {
    expect(await group(new MemoryStore())).toEqual([[true, true, false], true]);
  });

  it.skipIf(redis === undefined)("RedisStore: a refused group holds no lease", async () => {
    const store = new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("lease-group"),
      expiryGraceMs: 600_000,
      timeoutMs: WORK_BOUND_MS,
    });
    expect(await group(store)).toEqual([[true, true, false], true]);
  });

  it("a granted group's leases are held and released by their decisions", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock })
      .addRule("c", lease(1, 60_000))
      .addRule("r", { algorithm: "fixed-window", limit: 3, windowMs: 60_000 });
    const granted = service.checkAll([
      { rule: "c", key: "k" },
      { rule: "r", key: "k" },
    ]);
    expect(granted.map((d) => d.allowed)).toEqual([true, true]);
    expect((service.check("c", "k") as Decision).allowed).toBe(false);
    (granted[0] as Decision & { release: () => Decision }).release();
    expect((service.check("c", "k") as Decision).allowed).toBe(true);
  });
});

// A config reload while requests are in flight: updateRule (limit 2 -> 3, same leaseMs) between
// a check and its decision's release(). Found by test/redis/lease-model.test.ts (cluster exact,
// seed 20262202; redis exact, seeds 20262202 and 20262208). The promise (SPEC §16): release()
// gives the lease back, so the slot is free again, and answers what a peek then says.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Decision, ManualClock, MemoryStore, RateLimiterService, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";

const T = 1_765_000_000_000;
const lease = (limit: number) => ({ algorithm: "concurrency", limit, leaseMs: 60_000 }) as const;
const free = (d: Decision): number => (d.allowed ? d.remaining + 1 : 0);
const redis = await standaloneRedis("lease update");
const dir = mkdtempSync(join(tmpdir(), "sluice-lease-update-"));
const cluster: ClusterStore[] = [];
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** [free slots release() reports, free slots a peek then sees] after the reload. */
async function reload(store: Store): Promise<[number, number]> {
  const clock = new ManualClock(T);
  const service = new RateLimiterService({ clock, store }).addRule("r", lease(2));
  const d = (await service.check("r", "k")) as Decision;
  expect(d.allowed).toBe(true);
  await service.check("r", "k");
  service.updateRule("r", lease(3));
  clock.advance(1);
  const released = (await (d.release as () => Promise<Decision>)()) as Decision;
  const peek = (await service.peek("r", "k")) as Decision;
  return [free(released), free(peek)];
}

describe("release() after updateRule (a config reload mid-request)", () => {
  const clients = useStandaloneClients(redis);
  const onRedis = () =>
    new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("lease-update"),
      expiryGraceMs: 600_000,
      timeoutMs: WORK_BOUND_MS,
    });
  const onCluster = () => {
    const socket = join(dir, `s${cluster.length}.sock`);
    const host = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    const client = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    cluster.push(client, host);
    return client;
  };

  it("MemoryStore: the lease is freed and the answer is the new rule's", async () => {
    expect(await reload(new MemoryStore())).toEqual([2, 2]);
  });

  // Was broken (fixed on the lease branch): on Redis the slot was freed, but release() answered
  // with the old rule's limit ([1, 2]): the handle ran on the limiter of the check, bound to the
  // old specs. Now the handle acts through the rule as it stands (src/lease.ts handOver).
  it.skipIf(redis === undefined)("RedisStore: the answer of release() is the new rule's", async () => {
    expect(await reload(onRedis())).toEqual([2, 2]);
  });

  it.skipIf(redis === undefined)("RedisStore: the lease is freed", async () => {
    expect((await reload(onRedis()))[1]).toBe(2);
  });

  // Was broken (fixed on the lease branch): release() failed ("rule binding N is not
  // registered": updateRule closed the old limiter, which released its binding on the host) and
  // was answered by onError, so the slot stayed taken for leaseMs. Now it acts through the
  // current limiter's binding.
  it("ClusterStore: the lease is freed", async () => {
    expect((await reload(onCluster()))[1]).toBe(2);
  });
});

/**
 * The traces of test/properties/lease-known.test.ts on a store: leases past a lowered limit are
 * held (renewable), and neither a renewal nor a penalty pushes another lease out. Returns
 * [renewal after the limit went down allowed, admitted once the limit is back, penalty trace admitted].
 */
async function lowered(store: () => Store): Promise<[boolean, boolean, boolean]> {
  const clock = new ManualClock(T);
  const s1 = new RateLimiterService({ clock, store: store() }).addRule("r", lease(5));
  const l1 = (await s1.check("r", "k", { cost: 3 })) as Decision;
  clock.advance(1);
  const l2 = (await s1.check("r", "k", { cost: 2 })) as Decision;
  s1.updateRule("r", lease(1));
  clock.advance(1);
  const renewed = ((await s1.renew("r", "k", { cost: 3, at: l1.at as number })) as Decision).allowed;
  await (l2.renew as () => Promise<Decision>)();
  s1.updateRule("r", lease(5));
  clock.advance(1);
  const admitted = ((await s1.check("r", "k")) as Decision).allowed;
  const s2 = new RateLimiterService({ clock, store: store() }).addRule("p", lease(4));
  await s2.check("p", "k", { cost: 3 });
  s2.updateRule("p", lease(1));
  clock.advance(1);
  await s2.penalty("p", "k");
  s2.updateRule("p", lease(4));
  clock.advance(1);
  return [renewed, admitted, ((await s2.check("p", "k")) as Decision).allowed];
}

describe("leases past a lowered limit, on every store (the Lua twin and the cluster host alike)", () => {
  const clients = useStandaloneClients(redis);
  const expected: [boolean, boolean, boolean] = [true, false, false];
  it("MemoryStore", async () => {
    expect(await lowered(() => new MemoryStore())).toEqual(expected);
  });
  it.skipIf(redis === undefined)("RedisStore", async () => {
    const prefix = uniquePrefix("lease-lowered");
    const store = new RedisStore({ client: clients.io, prefix, expiryGraceMs: 600_000, timeoutMs: WORK_BOUND_MS });
    expect(await lowered(() => store)).toEqual(expected);
  });
  it("ClusterStore", async () => {
    const socket = join(dir, `low${cluster.length}.sock`);
    const host = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    const client = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    cluster.push(client, host);
    expect(await lowered(() => client)).toEqual(expected);
  });
});

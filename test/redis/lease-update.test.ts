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

  // On Redis the slot is freed, but release() answers with the old rule's limit: got [1, 2]
  // (1 free of limit 2, where the reloaded rule has 2 free of 3).
  // Likely cause: the handle runs on the limiter of the check (bound to the old specs; the
  // service's updateRule closed it), so its peek of the answer is decided with the old limit.
  it.skipIf(redis === undefined)("RedisStore: the answer of release() is the new rule's", async () => {
    expect(await reload(onRedis())).toEqual([2, 2]);
  });

  it.skipIf(redis === undefined)("RedisStore: the lease is freed", async () => {
    expect((await reload(onRedis()))[1]).toBe(2);
  });

  // Got a peek of 1 free slot of 3: release() fails ("rule binding N is not registered": updateRule closed the old
  // limiter, which released its binding on the host) and is answered by onError; the lease is
  // never given back and holds its slot for leaseMs (60 s here): a leaked slot per request in
  // flight at each reload. Likely cause: the handle keeps the old limiter's binding id
  // (src/lease.ts holdLease over the old limiter's run); the cluster host forgets it on close.
  it("ClusterStore: the lease is freed", async () => {
    expect((await reload(onCluster()))[1]).toBe(2);
  });
});

// The fleet queue through Redis Sentinel (real processes, test/support/redis-topologies.ts: a
// master, a replica and 3 `redis-server --sentinel`), with a failover mid-run: two throttles on
// two sentinel clients share one queue; after some jobs started, the master is killed (SIGKILL)
// and the sentinels promote the replica. No job runs twice; every job either ran and resolved or
// was rejected with an error; the jobs waiting through the failover run on the new master (their
// tickets are sent again when the link comes back; a grant the replica never received is a new
// grant for a job already started, which the runner ignores).
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/core/errors.ts";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { canStartRedis, WORK_BOUND_MS } from "../support/redis-server.ts";
import { startSentinel, type TestSentinel } from "../support/redis-topologies.ts";
import { sentinelClient } from "../support/sentinel-client.ts";
import { runThroughOutage } from "./outage-run.ts";

const canStart = await canStartRedis("throttle fleet queue through Sentinel");

describe.skipIf(!canStart)("the fleet queue through Redis Sentinel", () => {
  let sentinel: TestSentinel;
  let clients: Redis[] = [];

  beforeAll(async () => {
    sentinel = (await startSentinel()) as TestSentinel;
    clients = [0, 1].map(() => sentinelClient(sentinel.sentinelPorts));
    await Promise.all(clients.map((c) => c.connect()));
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await sentinel?.dispose();
  });

  it("a queue call whose command the client drops (in flight when its connection closed) fails within timeoutMs", async () => {
    // ioredis with autoResendUnfulfilledCommands: false and maxRetriesPerRequest: null drops a
    // command in flight when its connection closes, unsettled. A fleet call left so would hold
    // its job's release (close() never resolving) or its key's wake-up forever: seen as this
    // file's failover test timing out under load. Here: the command waits in a paused server,
    // its connection is killed, and the call must still fail, as a StoreError, in timeoutMs.
    const client = clients[0] as Redis;
    const store = new RedisStore({ client, prefix: "sentinel-drop:", timeoutMs: 300 });
    const queue = await store.openFleetQueue({
      rate: undefined,
      concurrency: {
        id: "name:throttle:drop:concurrency",
        spec: { algorithm: "concurrency", limit: 1, leaseMs: 3000 } as never,
      },
      ownerTtlMs: 1000,
      listener: { granted: () => {}, wake: () => {}, relinked: () => {} },
    });
    const admin = new Redis({ port: sentinel.master.port, host: "127.0.0.1", lazyConnect: true });
    admin.on("error", () => {});
    await admin.connect();
    try {
      const id = await client.client("ID");
      // WRITE: scripts wait; the sentinels' PING and INFO do not (no failover).
      await admin.client("PAUSE", "2000", "WRITE");
      const call = queue.heartbeat("k").then(
        () => "answered",
        (error: unknown) => error,
      );
      await new Promise((r) => setTimeout(r, 50));
      await admin.client("KILL", "ID", String(id));
      await admin.client("UNPAUSE");
      const unsettled = new Promise((r) => setTimeout(() => r("never settled"), 5000));
      const outcome = await Promise.race([call, unsettled]);
      expect(outcome).toBeInstanceOf(StoreError);
      expect((outcome as StoreError).message).toMatch(/did not answer within timeoutMs/);
    } finally {
      await admin.client("UNPAUSE").catch(() => {});
      admin.disconnect();
      await queue.close();
      for (let i = 0; i < 100 && client.status !== "ready"; i++) await new Promise((r) => setTimeout(r, 50));
    }
  });

  it("a failover mid-run: no job runs twice, none is lost without an error to its caller", {
    timeout: 90_000,
  }, async () => {
    const stores = clients.map((client) => new RedisStore({ client, prefix: "sentinel-fleet:", timeoutMs: 2000 }));
    const throttles = stores.map((store) =>
      createThrottle({ name: "failover", store, clock: systemClock, concurrency: 2, leaseMs: 3000 }),
    );
    const { resolved, errors } = await runThroughOutage(
      throttles,
      async () => {
        // What was written so far reached the replica (Redis replicates asynchronously:
        // test/redis/sentinel.test.ts); what is written after the WAIT may be lost.
        await clients[0]?.call("WAIT", "1", String(WORK_BOUND_MS));
        await sentinel.master.stop(); // SIGKILL
      },
      {
        // The jobs started after the 10th end only once the master is dead: their releases meet
        // the failover, so it is mid-run however fast the rest would have gone (a loaded machine
        // once let every job finish before the WAIT returned: no error at all).
        hold: async (started, outage) => {
          if (started > 10) await outage;
        },
      },
    );
    // The failover was real: the sentinels name the old replica, and calls failed meanwhile.
    expect(await sentinel.masterPort()).toBe(sentinel.replica.port);
    expect(errors.length).toBeGreaterThan(0);
    // The jobs waiting through it ran on the new master (onError "wait", no maxWaitMs).
    expect(resolved.length).toBe(80);
    for (const t of throttles) await t.close();
  });
});

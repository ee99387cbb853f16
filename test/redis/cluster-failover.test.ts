// A Cluster master killed (kill -9) mid-load on a real 3-master, 3-replica Cluster started here
// (cluster-node-timeout 1000 ms, cluster-require-full-coverage no): which keys are affected and
// for how long. Asserted: checks for keys on the other masters are all decided by Redis, every
// check settles within timeoutMs (+ a loose margin), the killed master's keys are decided again
// once its replica takes over, and Redis never stores more than the admissions it acknowledged.
import { Cluster } from "ioredis";
import { createLimiter, type Decision, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/redis-server.ts";
import { clusterRedis, clusterSeeds, recordingStore, slotFor } from "../support/redis-topologies.ts";

const cluster = await clusterRedis("cluster failover", {
  replicas: 1,
  nodeTimeoutMs: 1000,
  extraArgs: ["--cluster-require-full-coverage", "no"],
});

// The deadline a healthy master's check must meet. 1 s, not less: on a loaded 2-core machine
// (two suites, six redis-servers) the event loop once stalled past 300 ms for whole rounds and
// every in-flight check, healthy or not, was answered by its deadline timer. A check queued behind
// the dead master would still miss 1 s: cluster-node-timeout is 1 s and the takeover takes longer.
const TIMEOUT = 1000;
const MARGIN = 1500;

describe.skipIf(cluster === undefined)("Redis Cluster failover", () => {
  let io: Cluster;

  beforeAll(async () => {
    io = new Cluster(clusterSeeds(cluster?.ports ?? []), {
      enableOfflineQueue: false,
      retryDelayOnTryAgain: 0,
      redisOptions: { autoResendUnfulfilledCommands: false },
    });
    io.on("error", () => {});
    await new Promise((r) => io.once("ready", r));
  });
  afterAll(async () => {
    io?.disconnect();
  });

  it("a master killed mid-load: only its keys are affected, until its replica takes over", async () => {
    const prefix = uniquePrefix("failover");
    const store = new RedisStore({ client: io, prefix, timeoutMs: TIMEOUT, denyCache: false });
    const ids: string[] = [];
    const clock = new ManualClock(3_000_000);
    const limit = 100_000;
    const spec = { algorithm: "fixed-window", limit, windowMs: 3_600_000 } as const;
    const limiter = createLimiter(spec, { store: recordingStore(store, ids), clock, name: "failover" });
    const id = ids[0] as string;
    const byNode = new Map<string, string[]>();
    for (let i = 0; [...byNode.values()].filter((k) => k.length >= 8).length < 3; i++) {
      const key = `user:${i}`;
      const node = io.slots[slotFor(id, key)]?.[0] as string;
      const keys = byNode.get(node) ?? [];
      if (keys.length < 8) keys.push(key);
      byNode.set(node, keys);
    }
    const killedAddress = `127.0.0.1:${cluster?.ports[0]}`;
    expect(byNode.has(killedAddress)).toBe(true);
    const admitted = new Map<string, number>();
    let slowest = 0;
    const round = async () => {
      const results = await Promise.all(
        [...byNode.entries()].flatMap(([node, keys]) =>
          keys.map(async (key) => {
            const started = performance.now();
            const d: Decision = await limiter.tryAcquire(key);
            slowest = Math.max(slowest, performance.now() - started);
            if (d.allowed && d.failure === undefined) admitted.set(key, (admitted.get(key) ?? 0) + 1);
            return { node, key, d };
          }),
        ),
      );
      return results;
    };
    // Every node answers first through a limiter of its own (see cluster-faults.test.ts).
    const warmIds: string[] = [];
    const warm = createLimiter(spec, { store: recordingStore(store, warmIds), clock, name: "failover-warm" });
    const warmKeys = new Map<string, string>();
    for (let i = 0; warmKeys.size < 3; i++) {
      warmKeys.set(io.slots[slotFor(warmIds[0] as string, `w${i}`)]?.[0] as string, `w${i}`);
    }
    let warmed = false;
    for (let i = 0; i < 50 && !warmed; i++) {
      const ds = await Promise.all([...warmKeys.values()].map((k) => warm.tryAcquire(k)));
      warmed = ds.every((d) => d.failure === undefined);
      if (!warmed) await new Promise((r) => setTimeout(r, 50));
    }
    expect(warmed).toBe(true);
    const killedAt = performance.now();
    await cluster?.nodes[0]?.stop();
    let lastFailure = killedAt;
    let failedChecks = 0;
    let healthyDecided = 0;
    let healthyFailed = 0;
    const healthyErrors = new Set<string>();
    let recoveredRounds = 0;
    for (let r = 0; r < 1000 && recoveredRounds < 5; r++) {
      let killedKeysOk = true;
      for (const { node, d } of await round()) {
        if (node === killedAddress) {
          if (d.failure !== undefined) {
            killedKeysOk = false;
            failedChecks++;
            lastFailure = performance.now();
            expect(d.allowed).toBe(false);
          }
        } else if (d.failure === undefined) {
          healthyDecided++;
        } else {
          healthyFailed++;
          healthyErrors.add(d.failure.error.message);
        }
      }
      recoveredRounds = killedKeysOk ? recoveredRounds + 1 : 0;
      if (!killedKeysOk) await new Promise((r) => setTimeout(r, 20));
    }
    expect(recoveredRounds).toBe(5);
    expect(healthyFailed, `healthy checks failed with ${[...healthyErrors].join(", ")}`).toBe(0);
    expect(healthyDecided).toBeGreaterThan(0);
    expect(slowest).toBeLessThan(TIMEOUT + MARGIN);
    // Counts: exact on the healthy masters; on the failed-over keys Redis may have lost the last
    // writes that had not reached the replica (asynchronous replication), never gained any.
    const verifyStore = new RedisStore({ client: io, prefix, timeoutMs: 5000, denyCache: false });
    const verify = createLimiter(spec, { store: verifyStore, clock, name: "failover" });
    for (const [node, keys] of byNode) {
      for (const key of keys) {
        const peek = await verify.peek(key);
        expect(peek.failure, key).toBeUndefined();
        const stored = limit - peek.remaining - 1;
        if (node === killedAddress) expect(stored, key).toBeLessThanOrEqual(admitted.get(key) ?? 0);
        else expect(stored, key).toBe(admitted.get(key));
      }
    }
    console.info(
      `master kill -9 (cluster-node-timeout 1000): its keys failed by policy for ${Math.round(lastFailure - killedAt)} ms (${failedChecks} checks); the other masters decided ${healthyDecided} of ${healthyDecided + healthyFailed} checks meanwhile; slowest check ${Math.round(slowest)} ms (timeoutMs ${TIMEOUT})`,
    );
  }, 60_000);
});

// RedisStore on a 3-master Redis Cluster started here: parity with ioredis Cluster and
// node-redis createCluster, and every key of one check in one slot, even for hostile user keys.
import { createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { hashedKey } from "../../src/core/key-bound.ts";
import { expectExercised, PARITY_RULES, runParitySuite } from "../support/redis-parity.ts";
import { uniquePrefix } from "../support/redis-server.ts";
import { clusterRedis, useClusterClients } from "../support/redis-topologies.ts";

const cluster = await clusterRedis("cluster");

const HOSTILE = ["{", "}", "{}", "{a}", "}{", ":", "*", "", "a:b", "x".repeat(10_240), "{".repeat(50)];

describe.skipIf(cluster === undefined)("Redis Cluster", () => {
  const clients = useClusterClients(cluster);

  for (const client of ["ioredis", "node-redis"] as const) {
    for (const rule of PARITY_RULES) {
      it(`parity: ${rule.name} with ${client} Cluster`, async () => {
        const summary = await runParitySuite(
          rule,
          () =>
            new RedisStore({
              client: client === "ioredis" ? clients.io : clients.node,
              prefix: uniquePrefix(`cluster-${client}`),
              expiryGraceMs: 600_000,
              denyCache: false,
            }),
        );
        expectExercised(rule, summary);
      });
    }
  }

  it("hostile keys stay separate, one record key each, spread over the cluster", async () => {
    const prefix = uniquePrefix("hostile");
    const store = new RedisStore({ client: clients.io, prefix, expiryGraceMs: 600_000 });
    const clock = new ManualClock(1_000_000);
    const limiter = createLimiter(
      [
        { algorithm: "fixed-window", limit: 4, windowMs: 60_000 },
        { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
      ],
      { clock, store },
    );
    // Each hostile key takes a different number of units; each must see only its own count.
    for (const [i, key] of HOSTILE.entries()) {
      for (let n = 0; n <= i % 3; n++) expect((await limiter.tryAcquire(key)).allowed).toBe(true);
    }
    for (const [i, key] of HOSTILE.entries()) {
      // A peek reports what taking one more unit would leave.
      expect((await limiter.peek(key)).remaining, `key #${i}`).toBe(4 - 1 - (i % 3) - 1);
    }
    // Find every key sluice wrote (SCAN each master): one record per hostile key (both members'
    // states in it), no more.
    const written: string[] = [];
    for (const master of clients.io.nodes("master")) {
      let cursor = "0";
      do {
        const [next, keys] = await master.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        cursor = next;
        written.push(...keys);
      } while (cursor !== "0");
    }
    expect(written.length).toBe(HOSTILE.length);
    // Each record is reached through its own tag's slot, as Redis itself computes it.
    const slots = await Promise.all(written.map((k) => clients.io.cluster("KEYSLOT", k) as Promise<number>));
    // The user keys, verbatim after the tag and the 8-character rule digest, are all there.
    const users = written.map((k) => k.replace(/^[^{]*\{[^}]*\}[A-Za-z0-9_-]{8}/, ""));
    // Keys past maxKeyBytes (1 KB by default) are stored as their digest, in a namespace of their own.
    expect(new Set(users)).toEqual(new Set(HOSTILE.map((k) => (k.length > 1024 ? hashedKey(k) : k))));
    // And the user keys are spread over the cluster, not pinned to one slot by their braces.
    expect(new Set(slots).size).toBeGreaterThan(1);
    for (const key of HOSTILE) await limiter.reset(key);
    expect((await limiter.peek("{")).remaining).toBe(3);
  });
});

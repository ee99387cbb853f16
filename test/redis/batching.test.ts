import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { PARITY_RULES, PARITY_SEEDS, runBatchedTrace } from "../support/redis-parity.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("batching (standalone)");

const EVENTS = 400;

describe.skipIf(redis === undefined)("Redis batching parity, standalone", () => {
  const clients = useStandaloneClients(redis);

  for (const client of ["ioredis", "node-redis"] as const) {
    it(`every rule at once, ${EVENTS} checks per burst, with ${client}`, async () => {
      let compared = 0;
      for (let seed = 1; seed <= PARITY_SEEDS; seed++) {
        const store = new RedisStore({
          client: client === "ioredis" ? clients.io : clients.node,
          prefix: uniquePrefix(`batching-${client}`),
          expiryGraceMs: 600_000,
          denyCache: false,
        });
        compared += await runBatchedTrace(PARITY_RULES, store, seed * 31 + 7, EVENTS);
      }
      expect(compared).toBe(PARITY_SEEDS * EVENTS);
    });
  }
});

import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARITY_RULES, PARITY_SEEDS, runBatchedTrace } from "../support/redis-parity.ts";
import {
  connectClients,
  findRedis,
  noRedis,
  type SharedRedis,
  type StandaloneClients,
  uniquePrefix,
} from "../support/redis-server.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("batching (standalone)");

const EVENTS = 400;

describe.skipIf(redis === undefined)("Redis batching parity, standalone", () => {
  const url = redis?.url ?? "";
  let clients: StandaloneClients;
  let io: StandaloneClients["io"];
  let node: StandaloneClients["node"];

  beforeAll(async () => {
    clients = await connectClients(url);
    ({ io, node } = clients);
  });
  afterAll(async () => {
    await clients?.close();
    await redis?.owned?.dispose();
  });

  for (const client of ["ioredis", "node-redis"] as const) {
    it(`every rule at once, ${EVENTS} checks per burst, with ${client}`, async () => {
      let compared = 0;
      for (let seed = 1; seed <= PARITY_SEEDS; seed++) {
        const store = new RedisStore({
          client: client === "ioredis" ? io : node,
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

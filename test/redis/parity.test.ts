import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { expectExercised, PARITY_RULES, runParitySuite } from "../support/redis-parity.ts";
import {
  connectClients,
  findRedis,
  noRedis,
  type SharedRedis,
  type StandaloneClients,
  uniquePrefix,
} from "../support/redis-server.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("parity (standalone)");

describe.skipIf(redis === undefined)("Redis parity, standalone", () => {
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
    for (const rule of PARITY_RULES) {
      it(`${rule.name} with ${client}`, async () => {
        const summary = await runParitySuite(
          rule,
          () =>
            new RedisStore({
              client: client === "ioredis" ? io : node,
              prefix: uniquePrefix(`parity-${client}`),
              // A ManualClock runs slower than real time: keep keys past their (manual) fresh time.
              expiryGraceMs: 600_000,
              // Exact figures: the deny cache answers repeats with aged figures (deny-cache.test.ts).
              denyCache: false,
            }),
        );
        expectExercised(rule, summary);
      });
    }
  }
});

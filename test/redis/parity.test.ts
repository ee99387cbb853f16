// Lua parity on standalone Redis, with ioredis and with node-redis: every algorithm and
// composite makes exactly the decisions of the TypeScript steps (the oracle).
import { Redis } from "ioredis";
import { createClient } from "redis";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARITY_EVENTS, PARITY_RULES, PARITY_SEEDS, runParitySuite } from "../support/redis-parity.ts";
import { findRedis, noRedis, type SharedRedis, uniquePrefix } from "../support/redis-server.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("parity (standalone)");

describe.skipIf(redis === undefined)("Redis parity, standalone", () => {
  const url = redis?.url ?? "";
  let io: Redis;
  let node: ReturnType<typeof createClient>;

  beforeAll(async () => {
    io = new Redis(url, { lazyConnect: true });
    await io.connect();
    node = createClient({ url });
    await node.connect();
  });
  afterAll(async () => {
    io?.disconnect();
    await node?.close();
    await redis?.owned?.dispose();
  });

  for (const client of ["ioredis", "node-redis"] as const) {
    for (const { name, spec } of PARITY_RULES) {
      it(`${name} with ${client}`, async () => {
        const compared = await runParitySuite(
          spec,
          name,
          () =>
            new RedisStore({
              client: client === "ioredis" ? io : node,
              prefix: uniquePrefix(`parity-${client}`),
              // A ManualClock runs slower than real time: keep keys past their (manual) fresh time.
              expiryGraceMs: 600_000,
            }),
        );
        expect(compared).toBeGreaterThan(PARITY_SEEDS * 2 * PARITY_EVENTS * 0.8);
      });
    }
  }
});

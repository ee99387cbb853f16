// Batched parity on standalone Redis: checks of several rules issued at once share script
// calls (uniform and mixed batches, several per burst) and still make exactly the decisions
// the memory store makes one after another.
import { Redis } from "ioredis";
import { createClient } from "redis";
import type { RuleSpec } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARITY_RULES, PARITY_SEEDS, runBatchedTrace } from "../support/redis-parity.ts";
import { findRedis, noRedis, type SharedRedis, uniquePrefix } from "../support/redis-server.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("batching (standalone)");

const EVENTS = 400;

describe.skipIf(redis === undefined)("Redis batching parity, standalone", () => {
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

  const specs: RuleSpec[] = PARITY_RULES.map((r) => r.spec);
  for (const client of ["ioredis", "node-redis"] as const) {
    it(`every rule at once, ${EVENTS} checks per burst, with ${client}`, async () => {
      let compared = 0;
      for (let seed = 1; seed <= PARITY_SEEDS; seed++) {
        const store = new RedisStore({
          client: client === "ioredis" ? io : node,
          prefix: uniquePrefix(`batching-${client}`),
          expiryGraceMs: 600_000,
        });
        compared += await runBatchedTrace(specs, store, seed * 31 + 7, EVENTS);
      }
      expect(compared).toBe(PARITY_SEEDS * EVENTS);
    });
  }
});

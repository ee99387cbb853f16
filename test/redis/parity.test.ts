import { RedisStore } from "sluice/redis";
import { describe, it } from "vitest";
import { LUA_EDGES } from "../support/lua-edges.ts";
import { LUA_STEP_EDGES } from "../support/lua-step-edges.ts";
import { PARITY_EDGES } from "../support/parity-edges.ts";
import { expectExercised, MODEL_RULES, PARITY_RULES, runParitySuite } from "../support/redis-parity.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("parity (standalone)");
/** Seeds per rule: events are issued in batches, so more than the shared default fit (SLUICE_PARITY_SEEDS overrides). */
const SEEDS = Number(process.env.SLUICE_PARITY_SEEDS ?? 8);

describe.skipIf(redis === undefined)("Redis parity, standalone", () => {
  const clients = useStandaloneClients(redis);

  const store = (client: "ioredis" | "node-redis") => () =>
    new RedisStore({
      client: client === "ioredis" ? clients.io : clients.node,
      prefix: uniquePrefix(`parity-${client}`),
      // A ManualClock runs slower than real time: keep keys past their (manual) fresh time.
      expiryGraceMs: 600_000,
      // Exact figures: the deny cache answers repeats with aged figures (deny-cache.test.ts).
      denyCache: false,
    });

  for (const client of ["ioredis", "node-redis"] as const) {
    for (const rule of PARITY_RULES) {
      it(`${rule.name} with ${client}`, async () => {
        expectExercised(rule, await runParitySuite(rule, store(client), SEEDS), SEEDS);
      });
    }
  }

  // Redis against the reference model (no code shared with src/), so the TypeScript that turns
  // the Lua's replies into Decisions is checked too, not only the Lua against the MemoryStore.
  for (const rule of MODEL_RULES) {
    it(`${rule.name} against the reference model`, async () => {
      expectExercised(rule, await runParitySuite(rule, store("ioredis"), SEEDS, true), SEEDS, 1, 1);
    });
  }

  // Boundaries at fixed instants, where `<` and `<=` in the Lua differ; each checked against
  // literal figures and the reference model (test/support/parity-edges.ts).
  describe("boundaries at fixed instants", () => {
    for (const edge of PARITY_EDGES) it(edge.name, () => edge.run(clients.io));
    // The Lua's less travelled paths (test/support/lua-edges.ts): Redis TIME, errors, blocks.
    for (const edge of [...LUA_EDGES, ...LUA_STEP_EDGES]) it(edge.name, () => edge.run(clients.io));
  });
});

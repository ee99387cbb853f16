import { createLimiter } from "sluice";
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

  // A batch of alike checks takes check.lua's hot path (bareChecks): a key met again in the same
  // batch is decided on its first check's write. (It caught a read-ahead of the batch's keys by
  // one MGET that served a key's second check its value from before the first.)
  for (const algorithm of ["gcra", "fixed-window"] as const) {
    it(`${algorithm}: a key several times in one batch of alike checks counts every check`, async () => {
      const store = new RedisStore({ client: clients.io, prefix: uniquePrefix("batching-dup"), denyCache: false });
      const spec =
        algorithm === "gcra" ? { algorithm, limit: 3, periodMs: 60_000 } : { algorithm, limit: 3, windowMs: 60_000 };
      const limiter = createLimiter(spec, { store });
      // One check each first, so the keys exist (an absent key is read by GET, not ahead).
      for (const key of ["a", "b", "c"]) expect((await limiter.tryAcquire(key)).allowed).toBe(true);
      // 30 checks in one turn (one call: at most 32 a batch), keys a b c a b c ...
      const decisions = await Promise.all(
        Array.from({ length: 30 }, (_, i) => limiter.tryAcquire("abc"[i % 3] as string)),
      );
      for (const d of decisions) expect(d.failure).toBeUndefined();
      const allowed = [0, 1, 2].map((k) => decisions.filter((d, i) => i % 3 === k && d.allowed).length);
      expect(allowed).toEqual([2, 2, 2]);
    });
  }
});

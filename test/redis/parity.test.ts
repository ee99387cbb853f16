import { type AlgorithmSpec, createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import type { BanPolicy } from "../../src/core/ban.ts";
import { RuleOracle } from "../support/oracle.ts";
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
      expectExercised(rule, await runParitySuite(rule, store("ioredis"), SEEDS, true), SEEDS, 1);
    });
  }

  // Boundaries at fixed instants, where `<` and `<=` in the Lua differ; each checked against
  // literal figures and the reference model.
  describe("boundaries at fixed instants", () => {
    const T0 = 1_800_000_000_000; // a multiple of every window below
    const bound = (spec: AlgorithmSpec, ban?: BanPolicy) => {
      const clock = new ManualClock(T0);
      const store = new RedisStore({
        client: clients.io,
        prefix: uniquePrefix("parity-edges"),
        expiryGraceMs: 600_000,
        denyCache: false,
      });
      const limiter = createLimiter(spec, ban === undefined ? { clock, store } : { clock, store, ban });
      const model = new RuleOracle(spec, ban);
      return { clock, limiter, model };
    };

    it("ban: denials exactly withinMs apart are in different spans; 1 ms less apart, in one", async () => {
      const { clock, limiter, model } = bound(
        { algorithm: "fixed-window", limit: 1, windowMs: 100_000 },
        { after: 2, withinMs: 1000, forMs: 50_000 },
      );
      const check = async (at: number) => {
        clock.set(T0 + at);
        const got = await limiter.tryAcquire("k");
        expect(got, `check at T0+${at}`).toEqual(model.check(T0 + at, 1));
        return got;
      };
      expect((await check(0)).allowed).toBe(true);
      expect((await check(0)).banned).toBeUndefined(); // first denial: the span starts
      expect((await check(1000)).banned).toBeUndefined(); // exactly withinMs later: a new span
      expect((await check(1999)).banned).toBe(true); // 999 ms into that span: the second denial bans
      clock.set(T0 + 1999 + 50_000 - 1);
      expect((await limiter.peek("k")).banned).toBe(true);
      clock.set(T0 + 1999 + 50_000);
      expect((await limiter.peek("k")).banned).toBeUndefined();
    });

    it("a key's expiry covers its ban count: one denial keeps the key until withinMs after it", async () => {
      // No expiry grace: the key's TTL is exactly how long its state still matters. The denial
      // count matters until since + withinMs (100 s), long after the 1 s window.
      const clock = new ManualClock(T0);
      const prefix = uniquePrefix("parity-ban-ttl");
      const store = new RedisStore({ client: clients.io, prefix, denyCache: false });
      const limiter = createLimiter(
        { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
        { clock, store, ban: { after: 3, withinMs: 100_000, forMs: 1000 } },
      );
      expect((await limiter.tryAcquire("k")).allowed).toBe(true);
      expect((await limiter.tryAcquire("k")).banned).toBeUndefined();
      const keys = await clients.io.keys(`${prefix}*`);
      expect(keys.length).toBe(1);
      const ttl = await clients.io.pttl(keys[0] as string);
      expect(ttl).toBeGreaterThan(90_000);
      expect(ttl).toBeLessThanOrEqual(100_000);
    });

    it("sliding-log: a refund exactly one window after its check returns nothing", async () => {
      const { clock, limiter, model } = bound({ algorithm: "sliding-log", limit: 1, windowMs: 1000 });
      expect((await limiter.tryAcquire("k")).allowed).toBe(model.check(T0, 1).allowed);
      clock.set(T0 + 1000);
      expect(await limiter.refund("k")).toEqual(model.refund(T0 + 1000, 1));
      // The entry at T0 was not taken back: with the clock 1 ms back it still counts.
      clock.set(T0 + 999);
      const peek = await limiter.peek("k");
      expect(peek).toEqual(model.peek(T0 + 999, 1));
      expect(peek).toMatchObject({ allowed: false, retryAfterMs: 1 });
    });

    it("sliding-log: an entry exactly one window old no longer counts", async () => {
      const { clock, limiter, model } = bound({ algorithm: "sliding-log", limit: 2, windowMs: 1000 });
      for (const at of [0, 400, 999, 1000, 1000, 1400, 1400]) {
        clock.set(T0 + at);
        expect(await limiter.tryAcquire("k"), `at T0+${at}`).toEqual(model.check(T0 + at, 1));
      }
    });
  });
});

// A rule changed under a running service (updateRule, a reload, a rolling deploy) on Redis: a
// record is only ever read under the shape it was written for, so the Redis store answers
// exactly what the memory store answers. Regression: fixed-window state written under one
// windowMs and read under another after updateRule answered retryAfterMs 105967096332693
// (3,360 years) where the memory store said 3550520.
import { type Decision, ManualClock, RateLimiterService, type RuleSpec } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("spec changes (standalone)");

const HOUR: RuleSpec = { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 };
const MINUTE: RuleSpec = { algorithm: "fixed-window", limit: 5, windowMs: 60_000 };
const MINUTE_3: RuleSpec = { algorithm: "fixed-window", limit: 3, windowMs: 60_000 };

describe.skipIf(redis === undefined)("Redis spec changes, standalone", () => {
  const clients = useStandaloneClients(redis);

  for (const client of ["ioredis", "node-redis"] as const) {
    it(`fixed-window state is never read under another windowMs after updateRule (${client})`, async () => {
      const clock = new ManualClock(1_699_999_249_480);
      const memory = new RateLimiterService({ clock });
      const store = new RedisStore({
        client: client === "ioredis" ? clients.io : clients.node,
        prefix: uniquePrefix(`spec-change-${client}`),
        expiryGraceMs: 600_000,
      });
      const remote = new RateLimiterService({ clock, store });
      const both = async (check: (s: RateLimiterService<never>) => unknown): Promise<Decision> => {
        const expected = (await check(memory as RateLimiterService<never>)) as Decision;
        const actual = (await check(remote as RateLimiterService<never>)) as Decision;
        expect(actual).toEqual(expected);
        return actual;
      };
      memory.addRule("api", HOUR);
      remote.addRule("api", HOUR);
      for (let i = 0; i < 6; i++) await both((s) => s.check("api", "k"));
      const hourly = await both((s) => s.peek("api", "k"));
      expect(hourly.allowed).toBe(false);
      expect(hourly.retryAfterMs).toBe(3_550_520); // the hour's window ends then

      // A new window: a fresh record on both stores, never the hour's count read per minute.
      clock.advance(1000);
      memory.updateRule("api", MINUTE);
      remote.updateRule("api", MINUTE);
      const minute = await both((s) => s.check("api", "k"));
      expect(minute).toMatchObject({ allowed: true, remaining: 4 });
      for (let i = 0; i < 5; i++) await both((s) => s.check("api", "k"));
      const denied = await both((s) => s.check("api", "k"));
      expect(denied.allowed).toBe(false);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(60_000);

      // A new limit, same window: the record (5 taken) carries over and now exceeds the limit.
      memory.updateRule("api", MINUTE_3);
      remote.updateRule("api", MINUTE_3);
      expect(await both((s) => s.check("api", "k"))).toMatchObject({ allowed: false, remaining: 0 });
      await both((s) => s.refund("api", "k", { cost: 3 }));
      expect(await both((s) => s.check("api", "k"))).toMatchObject({ allowed: true, remaining: 0 });

      // Back to the hour, for a key filled per minute: the minute's record (its window index
      // times 60 s) is never read as an hour's window, which would lie 3,360 years ahead.
      for (let i = 0; i < 4; i++) await both((s) => s.check("api", "k2"));
      memory.updateRule("api", HOUR);
      remote.updateRule("api", HOUR);
      const back = await both((s) => s.check("api", "k2"));
      expect(back).toMatchObject({ allowed: true, remaining: 4 });
      expect(back.resetMs).toBeLessThanOrEqual(3_600_000);
      memory.removeRule("api");
      remote.removeRule("api");
    });
  }
});

/**
 * Redis parity at fixed instants, on the boundaries where `<` and `<=` in the Lua differ: each
 * edge runs a few operations on a RedisStore and checks them against literal figures and the
 * reference model. Shared by test/redis/parity.test.ts and the Lua mutation run
 * (scripts/mutate-lua.mjs), which reruns them against every mutant.
 */

import type { Redis } from "ioredis";
import { type AlgorithmSpec, createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import type { BanPolicy } from "../../src/ban.ts";
import { RuleOracle } from "./oracle.ts";
import { uniquePrefix } from "./redis-server.ts";

/** A multiple of every window below. */
const T0 = 1_800_000_000_000;

/** One fixed-instant edge: what it pins, and the run against an ioredis client. */
export interface ParityEdge {
  name: string;
  run(io: Redis): Promise<void>;
}

/** A limiter on a fresh prefix with a ManualClock at T0, and the model of the same rule. */
function bound(io: Redis, spec: AlgorithmSpec, ban?: BanPolicy) {
  const clock = new ManualClock(T0);
  const store = new RedisStore({
    client: io,
    prefix: uniquePrefix("parity-edges"),
    expiryGraceMs: 600_000,
    denyCache: false,
  });
  const limiter = createLimiter(spec, ban === undefined ? { clock, store } : { clock, store, ban });
  const model = new RuleOracle(spec, ban);
  return { clock, limiter, model };
}

/** The edges, in the order they run. */
export const PARITY_EDGES: ParityEdge[] = [
  {
    name: "ban: denials exactly withinMs apart are in different spans; 1 ms less apart, in one",
    async run(io) {
      const { clock, limiter, model } = bound(
        io,
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
    },
  },
  {
    name: "a key's expiry covers its ban count: one denial keeps the key until withinMs after it",
    async run(io) {
      // No expiry grace: the key's TTL is exactly how long its state still matters. The denial
      // count matters until since + withinMs (100 s), long after the 1 s window.
      const clock = new ManualClock(T0);
      const prefix = uniquePrefix("parity-ban-ttl");
      const store = new RedisStore({ client: io, prefix, denyCache: false });
      const limiter = createLimiter(
        { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
        { clock, store, ban: { after: 3, withinMs: 100_000, forMs: 1000 } },
      );
      expect((await limiter.tryAcquire("k")).allowed).toBe(true);
      expect((await limiter.tryAcquire("k")).banned).toBeUndefined();
      const keys = await io.keys(`${prefix}*`);
      expect(keys.length).toBe(1);
      const ttl = await io.pttl(keys[0] as string);
      expect(ttl).toBeGreaterThan(90_000);
      expect(ttl).toBeLessThanOrEqual(100_000);
    },
  },
  {
    name: "sliding-log: a refund exactly one window after its check returns nothing",
    async run(io) {
      const { clock, limiter, model } = bound(io, { algorithm: "sliding-log", limit: 1, windowMs: 1000 });
      expect((await limiter.tryAcquire("k")).allowed).toBe(model.check(T0, 1).allowed);
      clock.set(T0 + 1000);
      expect(await limiter.refund("k")).toEqual(model.refund(T0 + 1000, 1));
      // The entry at T0 was not taken back: with the clock 1 ms back it still counts.
      clock.set(T0 + 999);
      const peek = await limiter.peek("k");
      expect(peek).toEqual(model.peek(T0 + 999, 1));
      expect(peek).toMatchObject({ allowed: false, retryAfterMs: 1 });
    },
  },
  {
    name: "sliding-log: an entry exactly one window old no longer counts",
    async run(io) {
      const { clock, limiter, model } = bound(io, { algorithm: "sliding-log", limit: 2, windowMs: 1000 });
      for (const at of [0, 400, 999, 1000, 1000, 1400, 1400]) {
        clock.set(T0 + at);
        expect(await limiter.tryAcquire("k"), `at T0+${at}`).toEqual(model.check(T0 + at, 1));
      }
    },
  },
];

/**
 * Redis parity at fixed instants, on the boundaries where `<` and `<=` in the Lua differ: each
 * edge runs a few operations on a RedisStore and checks them against literal figures and the
 * reference model. Shared by test/redis/parity.test.ts and the Lua mutation run
 * (scripts/mutate-lua.mjs), which reruns them against every mutant.
 */

import type { Redis } from "ioredis";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import type { BanPolicy } from "../../src/core/ban.ts";
import { RuleOracle } from "./oracle.ts";
import { uniquePrefix } from "./redis-server.ts";

/** A multiple of every window below. */
const T0 = 1_800_000_000_000;

/** One fixed-instant edge: what it pins, and the run against an ioredis client. */
export interface ParityEdge {
  name: string;
  /**
   * The algorithm files (scripts/<name>.lua and codecs/<name>.lua) the edge runs, when it runs
   * only these: the Lua mutation run skips it for mutants of the other algorithms' files, whose
   * code it never loads. Undefined: every algorithm or several.
   */
  algorithms?: string[];
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
    algorithms: ["fixed-window"],
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
    algorithms: ["fixed-window"],
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
    algorithms: ["sliding-log"],
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
    algorithms: ["sliding-log"],
    async run(io) {
      const { clock, limiter, model } = bound(io, { algorithm: "sliding-log", limit: 2, windowMs: 1000 });
      for (const at of [0, 400, 999, 1000, 1000, 1400, 1400]) {
        clock.set(T0 + at);
        expect(await limiter.tryAcquire("k"), `at T0+${at}`).toEqual(model.check(T0 + at, 1));
      }
    },
  },
  {
    name: "fixed-window anchored at the first request: the window ends exactly windowMs after it",
    algorithms: ["fixed-window"],
    async run(io) {
      // No reference model for first-hit windows: the MemoryStore on the same clock, and literals.
      const spec = { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" } as const;
      const clock = new ManualClock(T0);
      const store = new RedisStore({
        client: io,
        prefix: uniquePrefix("parity-edges"),
        expiryGraceMs: 600_000,
        denyCache: false,
      });
      const remote = createLimiter(spec, { clock, store });
      const memory = createLimiter(spec, { clock, store: new MemoryStore() });
      const steps: Array<[number, "tryAcquire" | "peek" | "refund", Partial<Decision>]> = [
        [5, "tryAcquire", { allowed: true, remaining: 1, resetMs: 1000 }], // opens the window at T0+5
        [6, "tryAcquire", { allowed: true, remaining: 0, resetMs: 999 }],
        [1004, "tryAcquire", { allowed: false, remaining: 0, retryAfterMs: 1 }], // 1 ms before its end
        [1004, "refund", { allowed: true }], // the running window's unit comes back
        [1004, "tryAcquire", { allowed: true, remaining: 0, resetMs: 1 }],
        [1005, "peek", { allowed: true, remaining: 1, resetMs: 1000 }], // exactly at its end: a fresh window
        [1005, "tryAcquire", { allowed: true, remaining: 1, resetMs: 1000 }], // opens the next at T0+1005
        [1005, "refund", { allowed: true }],
        [2004, "tryAcquire", { allowed: true, remaining: 1, resetMs: 1 }],
      ];
      for (const [at, op, literal] of steps) {
        clock.set(T0 + at);
        const got = await remote[op]("k");
        expect(got, `${op} at T0+${at}`).toEqual(memory[op]("k"));
        expect(got, `${op} at T0+${at}: ${JSON.stringify(got)}`).toMatchObject(literal);
      }
    },
  },
  {
    name: "gcra at fractional instants: an arrival time within the current ms, refunds and penalties of it",
    algorithms: ["gcra"],
    async run(io) {
      // Emission interval 1000/3 ms (ticks of 1/3 ms): arrival times fall inside a ms, and
      // fractional instants put "now" on either side of them within the same ms.
      const spec = { algorithm: "gcra", limit: 3, periodMs: 1000, burst: 2 } as const;
      const clock = new ManualClock(T0);
      const store = new RedisStore({
        client: io,
        prefix: uniquePrefix("parity-edges"),
        expiryGraceMs: 600_000,
        denyCache: false,
      });
      const remote = createLimiter(spec, { clock, store });
      const memory = createLimiter(spec, { clock, store: new MemoryStore() });
      const steps: Array<[number, "tryAcquire" | "peek" | "refund"]> = [
        [0, "tryAcquire"], // arrival at T0 + 333.33
        [333.2, "peek"], // same ms, just before it
        [333.5, "peek"], // same ms, just after it
        [333.2, "tryAcquire"],
        [333.2, "tryAcquire"],
        [333.2, "refund"],
        [333.6, "refund"],
        [333.6, "tryAcquire"],
        [999.9, "tryAcquire"],
        [999.95, "refund"],
        [1000.2, "tryAcquire"],
        [1000.2, "tryAcquire"],
        [1000.9, "tryAcquire"],
        [1332.9, "tryAcquire"],
        [1333.1, "refund"],
        [1333.7, "tryAcquire"],
      ];
      for (const [at, op] of steps) {
        clock.set(T0 + at);
        expect(await remote[op]("k"), `${op} at T0+${at}`).toEqual(memory[op]("k"));
      }
    },
  },
  {
    name: "every algorithm: a key's expiry covers what still counts after one check",
    async run(io) {
      // No expiry grace: the TTL is exactly how long the state still matters (a shorter one
      // would forget counted requests). [spec, ms the state matters after a check at T0]
      const table: Array<[AlgorithmSpec, number]> = [
        [{ algorithm: "fixed-window", limit: 2, windowMs: 100_000 }, 100_000],
        [{ algorithm: "sliding-window", limit: 2, windowMs: 100_000 }, 200_000], // it weighs on the next window
        [{ algorithm: "sliding-log", limit: 2, windowMs: 100_000 }, 100_000],
        [{ algorithm: "token-bucket", capacity: 2, refillPerSecond: 0.02 }, 50_000], // full again
        [{ algorithm: "gcra", limit: 2, periodMs: 100_000 }, 50_000], // one emission interval
      ];
      for (const [spec, matters] of table) {
        const clock = new ManualClock(T0);
        const prefix = uniquePrefix("parity-ttl");
        const limiter = createLimiter(spec, { clock, store: new RedisStore({ client: io, prefix, denyCache: false }) });
        expect((await limiter.tryAcquire("k")).allowed).toBe(true);
        const keys = await io.keys(`${prefix}*`);
        expect(keys.length).toBe(1);
        const ttl = await io.pttl(keys[0] as string);
        expect(ttl, `${spec.algorithm}: TTL ${ttl}`).toBeGreaterThan(matters - 10_000);
        expect(ttl, `${spec.algorithm}: TTL ${ttl}`).toBeLessThanOrEqual(matters);
      }
    },
  },
];

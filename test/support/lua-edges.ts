/**
 * Edges for the Lua twin's paths the parity traces reach rarely or never: Redis TIME (no clock
 * injected), a foreign value beside good keys in one batch (the error reply's layout), blocks on
 * rules without a ban at their exact end, penalties and refunds of a blocked key, and a key whose
 * expiry was removed. Each runs fixed instants (2026-12-01 epoch) and compares the RedisStore's
 * answers with the MemoryStore's (or with literal figures). Shared by test/redis/parity.test.ts
 * and the Lua mutation run (scripts/mutate-lua.mjs), which reruns them against every mutant.
 */
import type { Redis } from "ioredis";
import { createLimiter, type Decision, type Limiter, type LimitSpec, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import type { BanPolicy } from "../../src/core/ban.ts";
import type { ParityEdge } from "./parity-edges.ts";
import { prng } from "./redis-parity.ts";
import { uniquePrefix } from "./redis-server.ts";

/** 2026-12-01T00:00:00Z: a multiple of every window below. */
const T = Date.UTC(2026, 11, 1);

/** One step of a scenario: [ms after T, call, key, cost or block ms]. */
export type Step = [number, "c" | "p" | "r" | "x" | "b" | "g" | "reset", string, number];

/** A Redis limiter and a MemoryStore one on one ManualClock; a store with no expiry grace when `tight`. */
function pair(io: Redis, spec: LimitSpec | LimitSpec[], ban?: BanPolicy, tight = false) {
  const clock = new ManualClock(T);
  const prefix = uniquePrefix("lua-edges");
  const store = new RedisStore({ client: io, prefix, denyCache: false, ...(tight ? {} : { expiryGraceMs: 600_000 }) });
  const options = ban === undefined ? { clock } : { clock, ban };
  const redis = createLimiter(spec, { ...options, store }) as Limiter;
  const memory = createLimiter(spec, { ...options, store: new MemoryStore() }) as Limiter;
  return { clock, prefix, redis, memory };
}

/** gcra specs whose intervals tick in different fractions of a ms (one rule name, respecified). */
const INTERVALS = {
  thirds: { algorithm: "gcra", limit: 3, periodMs: 1000 }, // 1/3 ms ticks
  ms: { algorithm: "gcra", limit: 1, periodMs: 1000 }, // whole ms
  fast: { algorithm: "gcra", limit: 10, periodMs: 10 }, // 1 ms per emission
  sevenths: { algorithm: "gcra", limit: 7, periodMs: 1000 }, // 1/7 ms ticks
} as const;

/** A step on a rule respecified between steps: [ms after T, spec argument, op, key, cost, receipt's ms after T]. */
type Respecified<A> = [number, A, "c" | "p" | "r" | "x", string, number, number?];

/**
 * Runs `steps` on Redis and on a MemoryStore under one rule name whose spec `specOf(arg)` may
 * change between steps (as updateRule does): every answer deep-equal.
 */
async function respecified<A>(io: Redis, specOf: (arg: A) => LimitSpec, steps: Array<Respecified<A>>): Promise<void> {
  const clock = new ManualClock(T);
  const remote = new RedisStore({
    client: io,
    prefix: uniquePrefix("lua-edges"),
    denyCache: false,
    expiryGraceMs: 600_000,
  });
  const local = new MemoryStore();
  const on = (arg: A, store: RedisStore | MemoryStore) =>
    createLimiter(specOf(arg), { clock, store, name: "respecified" }) as Limiter;
  for (const [at, arg, op, key, cost, receipt] of steps) {
    clock.set(T + at);
    const call = (l: Limiter) =>
      op === "c"
        ? l.tryAcquire(key, cost)
        : op === "p"
          ? l.peek(key, cost)
          : op === "x"
            ? l.penalty(key, cost)
            : l.refund(key, receipt === undefined ? cost : { cost, at: T + receipt });
    expect(await call(on(arg, remote)), `${op} ${key} ${cost} at T+${at} (${String(arg)})`).toEqual(
      await call(on(arg, local)),
    );
  }
}

/** Runs `steps` on both limiters: every answer deep-equal. */
export async function scenario(
  io: Redis,
  spec: LimitSpec | LimitSpec[],
  steps: Step[],
  ban?: BanPolicy,
): Promise<void> {
  const { clock, redis, memory } = pair(io, spec, ban);
  for (const [at, op, key, cost] of steps) {
    clock.set(T + at);
    const run = async (l: Limiter): Promise<Decision | null | "reset"> => {
      if (op === "c") return l.tryAcquire(key, cost);
      if (op === "p") return l.peek(key, cost);
      if (op === "r") return l.refund(key, cost);
      if (op === "x") return l.penalty(key, cost);
      if (op === "b") return l.block(key, cost);
      if (op === "g") return l.get(key);
      await l.reset(key);
      return "reset";
    };
    const expected = await run(memory);
    expect(await run(redis), `${op} ${key} ${cost} at T+${at}`).toEqual(expected);
  }
}

/** Redis TIME as epoch ms, read the way check.lua reads it. */
async function redisTime(io: Redis): Promise<number> {
  const [s, us] = await io.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The rules a block and the error layout are checked on: bare, composite, with a ban. */
const SPECS: Array<[string, LimitSpec | LimitSpec[], BanPolicy | undefined]> = [
  ["fixed-window", { algorithm: "fixed-window", limit: 3, windowMs: 10_000 }, undefined],
  ["sliding-log", { algorithm: "sliding-log", limit: 3, windowMs: 10_000 }, undefined],
  ["sliding-window", { algorithm: "sliding-window", limit: 3, windowMs: 10_000 }, undefined],
  ["token-bucket", { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.5 }, undefined],
  ["gcra", { algorithm: "gcra", limit: 3, periodMs: 10_000 }, undefined],
  [
    "composite",
    [
      { algorithm: "sliding-log", limit: 3, windowMs: 10_000 },
      { algorithm: "fixed-window", limit: 4, windowMs: 10_000 },
    ],
    undefined,
  ],
  [
    "fixed-window with a ban",
    { algorithm: "fixed-window", limit: 2, windowMs: 10_000 },
    { after: 2, withinMs: 5000, forMs: 3000 },
  ],
];

/** The edges, in the order they run. */
export const LUA_EDGES: ParityEdge[] = [
  {
    name: "Redis TIME: without a clock, a check is decided at the server's TIME in ms",
    algorithms: ["sliding-log"],
    async run(io) {
      // A sliding log keeps the instant it counted: a peek at a known instant reads it back.
      const spec = { algorithm: "sliding-log", limit: 1, windowMs: 3_600_000 } as const;
      const prefix = uniquePrefix("lua-edges-time");
      const store = new RedisStore({ client: io, prefix, denyCache: false, expiryGraceMs: 600_000 });
      const before = await redisTime(io);
      expect((await createLimiter(spec, { store, name: "t" }).tryAcquire("k")).allowed).toBe(true);
      const after = await redisTime(io);
      const at = after + 1000;
      const peek = await createLimiter(spec, { store, name: "t", clock: new ManualClock(at) }).peek("k");
      const counted = at + peek.retryAfterMs - 3_600_000;
      expect(counted, `counted at ${counted}, Redis TIME read ${before}..${after}`).toBeGreaterThanOrEqual(before);
      expect(counted).toBeLessThanOrEqual(after);
    },
  },
  {
    name: "a foreign value in a batch fails its own check; the checks around it decide as the MemoryStore",
    async run(io) {
      for (const [name, spec, ban] of SPECS) {
        const { prefix, redis, memory } = pair(io, spec, ban);
        await redis.tryAcquire("bad");
        const [bad] = await io.keys(`${prefix}*bad`);
        await io.del(bad as string);
        await io.rpush(bad as string, "x");
        memory.tryAcquire("bad");
        // Not uniform (two costs): the general path, one reply slot range per check.
        const keys: Array<[string, number]> = [
          ["a", 1],
          ["bad", 2],
          ["b", 1],
          ["a", 2],
        ];
        const got = await Promise.all(keys.map(([k, cost]) => redis.tryAcquire(k, cost)));
        for (const [i, [k, cost]] of keys.entries()) {
          const d = got[i] as Decision;
          if (k === "bad") {
            expect(d.failure?.error.message, `${name}: ${JSON.stringify(d)}`).toMatch(/error: WRONGTYPE/);
          } else {
            expect(d, `${name}: ${k} ${cost}`).toEqual(await memory.tryAcquire(k, cost));
          }
        }
      }
    },
  },
  {
    name: "a block on a rule without a ban ends exactly at its instant; penalties and refunds of a blocked key count",
    async run(io) {
      for (const [, spec, ban] of SPECS) {
        await scenario(
          io,
          spec,
          [
            [0, "c", "k", 1],
            [0, "b", "k", 500],
            [100, "x", "k", 1],
            [200, "r", "k", 1],
            [300, "x", "k", 2],
            [499, "c", "k", 1],
            [499, "g", "k", 1],
            [500, "g", "k", 1],
            [500, "p", "k", 1],
            [500, "c", "k", 1],
            [600, "b", "f", 300],
            [700, "r", "f", 1],
            [900, "c", "f", 1],
            [900, "g", "f", 1],
            [1000, "b", "n", 100],
            [1100, "g", "n", 1],
            [1100, "c", "n", 1],
          ],
          ban,
        );
      }
    },
  },
  {
    name: "a key whose expiry was removed gets it back on its next denial",
    async run(io) {
      for (const [name, spec, ban] of SPECS) {
        const { prefix, redis } = pair(io, spec, ban, true);
        for (let i = 0; i < 3; i++) await redis.tryAcquire("k");
        const [key] = await io.keys(`${prefix}*`);
        await io.persist(key as string);
        expect(await io.pttl(key as string)).toBe(-1);
        expect((await redis.tryAcquire("k", 3)).allowed, name).toBe(false);
        expect(await io.pttl(key as string), name).toBeGreaterThan(0);
      }
    },
  },
  {
    name: "get answers null exactly from the instant a record decides as a fresh one (every algorithm, composites, a ban)",
    async run(io) {
      // A get tells whether the record is equivalent to a fresh one: the twins' `fresh` (the
      // key's expiry) made visible, at the instants around each algorithm's boundaries.
      const at = [0, 1, 332, 333, 334, 499, 500, 999, 1000, 1001, 1332, 1333, 1334, 1999, 2000, 2001, 2999, 3000, 3001];
      const specs: Array<LimitSpec | LimitSpec[]> = [
        { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
        { algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "first" },
        { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
        { algorithm: "sliding-window", limit: 3, windowMs: 1000 },
        { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1.5 },
        { algorithm: "gcra", limit: 3, periodMs: 1000 },
        { algorithm: "gcra", limit: 1, periodMs: 1000 },
        { algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 2 },
        [
          { algorithm: "sliding-window", limit: 3, windowMs: 1000 },
          { algorithm: "gcra", limit: 2, periodMs: 2000 },
        ],
      ];
      for (const spec of specs) {
        // One check; two checks 400 ms apart; a check refunded at once (nothing counts).
        const firsts: Step[][] = [
          [[0, "c", "one", 1]],
          [
            [0, "c", "two", 1],
            [400, "c", "two", 2],
          ],
          [
            [0, "c", "back", 1],
            [0, "r", "back", 1],
          ],
        ];
        for (const first of firsts) {
          const key = (first[0] as Step)[2];
          const from = (first[first.length - 1] as Step)[0];
          await scenario(io, spec, [...first, ...at.filter((t) => t >= from).map((t): Step => [t, "g", key, 1])]);
        }
      }
      // A sliding window's refund in the next window: the state rolls (previous 1, current 0).
      await scenario(io, { algorithm: "sliding-window", limit: 3, windowMs: 1000 }, [
        [0, "c", "sw", 1],
        [1000, "r", "sw", 1],
        ...[1500, 1999, 2000, 2001, 2999, 3000].map((t): Step => [t, "g", "sw", 1]),
      ]);
      // A ban's count keeps a key until withinMs after its first denial; a ban that began
      // restarts the count, so the key is fresh once the ban and the window have ended.
      await scenario(
        io,
        { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
        [
          [0, "c", "k", 1],
          [0, "c", "k", 1],
          [10, "c", "k", 1],
          ...[500, 1009, 1010, 1011, 1500, 4999, 5000, 5001].map((t): Step => [t, "g", "k", 1]),
          [6000, "c", "j", 1],
          [6000, "c", "j", 1],
          ...[6500, 6999, 7000, 7001, 10_999, 11_000, 11_001].map((t): Step => [t, "g", "j", 1]),
        ],
        { after: 2, withinMs: 5000, forMs: 1000 },
      );
    },
  },
  {
    name: "fixed-window storage: a window index of 2^32 and a count of 2^21 leave the compact integer form",
    algorithms: ["fixed-window"],
    async run(io) {
      // The compact form k * 2^21 + c holds 0 <= k < 2^32 and 0 <= c < 2^21: at either bound
      // the integer would read back as another state (2^53 + c loses c's low bit; c = 2^21
      // carries into the next window).
      const { clock, redis, memory } = pair(io, { algorithm: "fixed-window", limit: 3_000_000, windowMs: 1000 });
      for (const [t, cost] of [
        [2 ** 32 * 1000, 1],
        [2 ** 32 * 1000, 2],
        [2 ** 32 * 1000 + 1000, 2 ** 21],
        [2 ** 32 * 1000 + 1001, 1],
        [2 ** 32 * 1000 + 1002, 2 ** 21 - 1],
      ] as const) {
        clock.set(t);
        expect(await redis.tryAcquire("k", cost), `${cost} at ${t}`).toEqual(await memory.tryAcquire("k", cost));
        expect(await redis.peek("k"), `peek at ${t}`).toEqual(await memory.peek("k"));
      }
      clock.set(T);
      for (const cost of [2 ** 21 - 1, 1, 1]) {
        expect(await redis.tryAcquire("j", cost), `${cost} at T`).toEqual(await memory.tryAcquire("j", cost));
      }
    },
  },
  {
    name: "fixed-window anchored at the first request: a refund and a penalty exactly at the window's end",
    algorithms: ["fixed-window"],
    async run(io) {
      const spec = { algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "first" } as const;
      await scenario(io, spec, [
        [0, "c", "r", 1],
        [10, "c", "r", 1],
        [1000, "r", "r", 1], // the window [0, 1000) has ended: nothing comes back
        [999, "p", "r", 1], // the clock steps back into it: both units still count
        [0, "c", "x", 1],
        [1000, "x", "x", 2], // opens the next window [1000, 2000) with the 2 units
        [1000, "p", "x", 1],
        [1500, "c", "x", 1],
      ]);
    },
  },
  {
    name: "a gcra record whose ticks are not below its denominator is refused, not read",
    algorithms: ["gcra"],
    async run(io) {
      const { prefix, redis } = pair(io, { algorithm: "gcra", limit: 3, periodMs: 1000 });
      await redis.tryAcquire("k");
      const [key] = await io.keys(`${prefix}*`);
      await io.set(key as string, `${T + 1000}+3/3`);
      const d = await redis.tryAcquire("k");
      expect(d.failure?.error.message, JSON.stringify(d)).toMatch(/not a sluice gcra state/);
    },
  },
  {
    name: "gcra: states written under other intervals keep their own denominators when one batch rewrites them",
    algorithms: ["gcra"],
    async run(io) {
      // A refund that finds nothing ahead rewrites the state as loaded. Two keys of one rule,
      // written under two other intervals (1/3 and 1/7 ms ticks, as after an updateRule) with
      // the same tick count, rewritten in one script call: each keeps its own tail (a tail
      // cache keyed by ticks alone would give the second key the first one's '/3').
      const { prefix, redis } = pair(io, { algorithm: "gcra", limit: 1, periodMs: 1000 });
      await Promise.all([redis.tryAcquire("a"), redis.tryAcquire("b")]);
      const stored = {
        a: `${T - 5000}+1/3`,
        b: `${T - 5000}+1/7`,
      };
      for (const [k, value] of Object.entries(stored)) {
        const [key] = await io.keys(`${prefix}*${k}`);
        await io.set(key as string, value);
      }
      await Promise.all([redis.refund("a"), redis.refund("b")]);
      for (const [k, value] of Object.entries(stored)) {
        const [key] = await io.keys(`${prefix}*${k}`);
        expect(await io.get(key as string), k).toBe(value);
      }
    },
  },
  {
    name: "sliding-log: a receipt exactly one window old gives nothing back (the entry counts again on a step back)",
    algorithms: ["sliding-log"],
    async run(io) {
      const spec = { algorithm: "sliding-log", limit: 2, windowMs: 1000 } as const;
      const { clock, redis, memory } = pair(io, spec);
      const a = await redis.tryAcquire("k");
      memory.tryAcquire("k");
      for (const [t, receipt] of [
        [1000, T],
        [999, T + 1],
        [999, T],
      ] as const) {
        clock.set(T + t);
        expect(await redis.refund("k", { cost: 1, at: receipt }), `refund of ${receipt} at T+${t}`).toEqual(
          await memory.refund("k", { cost: 1, at: receipt }),
        );
        expect(await redis.peek("k"), `peek at T+${t}`).toEqual(await memory.peek("k"));
      }
      expect(a.at).toBe(T);
    },
  },
  {
    name: "gcra and leaky bucket at fractional instants: checks, refunds with and without receipts, penalties, gets",
    algorithms: ["gcra"],
    async run(io) {
      // Instants in steps of 1/(2 den) ms and 0-3 ms apart: "now" lands on either side of, and
      // exactly on, arrival times within the current ms; receipts name checks just made or a
      // few ms old (partly drained).
      const specs: LimitSpec[] = [
        { algorithm: "gcra", limit: 3, periodMs: 1000, burst: 3 },
        { algorithm: "gcra", limit: 7, periodMs: 10, burst: 2 },
        { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 400 },
      ];
      for (const [n, spec] of specs.entries()) {
        const name = (spec as { algorithm: string }).algorithm;
        const { clock, redis, memory } = pair(io, spec);
        const random = prng(100 + n);
        const taken: number[] = [];
        let now = T;
        for (let i = 0; i < 250; i++) {
          now += Math.floor(random() * 7) / 2 + Math.floor(random() * 3) / 6;
          if (random() < 0.3)
            now = Math.floor(now) + ([0, 1 / 3, 2 / 3, 1 / 7, 0.5][Math.floor(random() * 5)] as number);
          clock.set(now);
          const a = random();
          const cost = 1 + Math.floor(random() * 2);
          const receipt = taken[taken.length - 1 - Math.floor(random() * 3)];
          const run = async (l: Limiter): Promise<Decision | null> => {
            if (a < 0.4) return l.tryAcquire("k", cost);
            if (a < 0.55) return l.refund("k", cost);
            if (a < 0.75 && receipt !== undefined) return l.refund("k", { cost, at: receipt });
            if (a < 0.85) return l.penalty("k", cost);
            if (a < 0.92) return l.peek("k", cost);
            return l.get("k");
          };
          const expected = await run(memory);
          const got = await run(redis);
          expect(got, `${name} event ${i} at T+${now - T} (${a.toFixed(2)})`).toEqual(expected);
          if (a < 0.4 && got?.allowed === true && got.at !== undefined) taken.push(got.at);
        }
      }
    },
  },
  {
    name: "sliding-log: receipts and penalties at the newest entry's instant, refunds across runs, a lowered limit",
    algorithms: ["sliding-log"],
    async run(io) {
      const spec = { algorithm: "sliding-log", limit: 5, windowMs: 1000 } as const;
      const { clock, redis, memory } = pair(io, spec);
      type Op = [number, "c" | "x" | "r" | "p", number, number?]; // at, op, cost, receipt (ms after T)
      const steps: Op[] = [
        [0, "c", 1],
        [0, "c", 1], // same instant: one run of 2
        [0, "r", 2, 0], // a receipt takes both back
        [0, "p", 1],
        [10, "c", 2],
        [10, "r", 1, 10], // part of a run
        [10, "p", 1],
        [10, "x", 2], // a penalty at the newest entry's instant
        [10, "r", 3, 10],
        [10, "p", 1],
        [20, "c", 2],
        [30, "c", 1],
        [40, "r", 2], // across two runs, newest first
        [40, "p", 1],
        [5, "x", 1], // a step back: appended at the newest instant
        [40, "r", 2, 30],
        [40, "p", 1],
      ];
      for (const [at, op, cost, receipt] of steps) {
        clock.set(T + at);
        const call = (l: Limiter) =>
          op === "c"
            ? l.tryAcquire("k", cost)
            : op === "x"
              ? l.penalty("k", cost)
              : op === "p"
                ? l.peek("k", cost)
                : l.refund("k", receipt === undefined ? cost : { cost, at: T + receipt });
        expect(await call(redis), `${op} ${cost} at T+${at}`).toEqual(await call(memory));
      }
      // A limit lowered under a full log (the same rule name, a smaller limit, as updateRule
      // does): the entries past the new limit are skipped, the oldest that counts decides.
      await respecified(io, (limit: number) => ({ algorithm: "sliding-log", limit, windowMs: 1000 }), [
        [0, 5, "c", "k", 2],
        [100, 5, "c", "k", 2],
        [200, 5, "c", "k", 1],
        [300, 2, "c", "k", 1],
        [300, 3, "c", "k", 1],
        [1050, 2, "c", "k", 1],
        [1150, 2, "c", "k", 1],
      ]);
    },
  },
  {
    name: "gcra: a refund when the arrival time is just behind now; a backlog just under the burst, a tick behind",
    algorithms: ["gcra"],
    async run(io) {
      // Arrival time at T+1000 exactly; a refund a third of a ms later finds nothing ahead (the
      // state stays where it was, so a get then finds the key fresh).
      await scenario(io, { algorithm: "gcra", limit: 3, periodMs: 1000 }, [
        [0, "c", "k", 3],
        [1000 + 1 / 3, "r", "k", 1],
        [1000 + 1 / 3, "g", "k", 1],
        [1000 + 2 / 3, "c", "k", 1],
      ]);
      // Emission interval 1/3 ms (1 tick), burst 30 (10 ms): full at T, then a tick later the
      // backlog is 29 ticks, 10 whole ms ahead but one unit fits.
      await scenario(io, { algorithm: "gcra", limit: 30, periodMs: 10 }, [
        [0, "c", "j", 30],
        [1 / 3, "p", "j", 1],
        [1 / 3, "c", "j", 1],
        [1 / 3, "c", "j", 1],
      ]);
    },
  },
  {
    name: "sliding-log: a penalty keeps only the newest `limit` units, within a run and across runs (a raised limit shows them)",
    algorithms: ["sliding-log"],
    run: (io) =>
      // A penalty drops the oldest units down to limit - take before appending its own: part of
      // one run (a cost-3 check), or whole runs. Decisions under the same limit cannot tell how
      // many were kept (only the newest `limit` count); a limit raised afterwards (the same rule
      // name, as updateRule does) counts every unit kept.
      respecified(io, (limit: number) => ({ algorithm: "sliding-log", limit, windowMs: 1000 }), [
        [0, 3, "c", "run", 3],
        [10, 3, "x", "run", 1],
        [20, 5, "p", "run", 1],
        [20, 5, "c", "run", 2],
        [30, 5, "p", "run", 1],
        [0, 3, "c", "runs", 1],
        [1, 3, "c", "runs", 1],
        [2, 3, "c", "runs", 1],
        [10, 3, "x", "runs", 2],
        [20, 6, "p", "runs", 1],
        [20, 6, "c", "runs", 3],
        [30, 6, "p", "runs", 1],
      ]),
  },
  {
    name: "gcra: a refund that gives nothing back keeps a state written under another interval exactly",
    algorithms: ["gcra"],
    run: (io) =>
      // GCRA state carries over when the interval changes (same shape): read under another
      // interval it is rounded up to the next ms. A refund that gives nothing back (the state is
      // not ahead of now in this rule's ticks, or a receipt's units have drained) must keep it
      // as written, not store the rounded instant: back under its own interval, with the clock
      // stepped back or a little later, the exact instant is not ahead where the rounded one is.
      respecified(io, (name: keyof typeof INTERVALS) => INTERVALS[name], [
        [0, "thirds", "c", "a", 1], // arrival T+333 1/3
        [334, "ms", "r", "a", 1], // read as T+334 = now: nothing ahead
        [333.5, "thirds", "p", "a", 1],
        [0, "thirds", "c", "b", 2], // arrival T+666 2/3
        [1, "fast", "r", "b", 1, 0], // the receipt's 1 ms has drained: nothing back
        [666.8, "thirds", "p", "b", 1],
        // A penalty also reads the state rounded up: T+333 1/3 in sevenths is T+334, and the
        // penalty's emission lands at T+476 6/7 (reset 477), where the unrounded ticks would
        // land at T+476 (reset 476).
        [0, "thirds", "c", "c", 1],
        [0, "sevenths", "x", "c", 1],
        [0, "sevenths", "p", "c", 1],
      ]),
  },
];

/**
 * rate-limiter-flexible's calls (penalty, block, get) on Redis against the MemoryStore: seeded
 * traces of checks, peeks, refunds, resets, penalties, blocks and gets over every algorithm, a
 * composite and banned rules, at an injected clock; every answer deep-equal, `null` gets
 * included. Shared by test/redis/rlf-calls.test.ts and the Lua mutation run
 * (scripts/mutate-lua.mjs), which reruns it against every mutant.
 */
import type { Redis } from "ioredis";
import { createLimiter, type Decision, type Limiter, type LimitSpec, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import { prng } from "./redis-parity.ts";
import { uniquePrefix, WORK_BOUND_MS } from "./redis-server.ts";

const BAN = { after: 3, withinMs: 900, forMs: 700 };

/** The rules a trace picks from (blocks land on rules with and without a ban). */
export const RLF_RULES: Array<{ spec: LimitSpec | LimitSpec[]; ban?: typeof BAN }> = [
  { spec: { algorithm: "fixed-window", limit: 3, windowMs: 1000 } },
  { spec: { algorithm: "fixed-window", limit: 3, windowMs: 700, anchor: "first" } },
  { spec: { algorithm: "sliding-log", limit: 3, windowMs: 1000 } },
  { spec: { algorithm: "sliding-window", limit: 4, windowMs: 1000 } },
  { spec: { algorithm: "token-bucket", capacity: 4, refillPerSecond: 3 } },
  { spec: { algorithm: "gcra", limit: 3, periodMs: 1000 } },
  { spec: { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 2.5 } },
  {
    spec: [
      { algorithm: "sliding-log", limit: 4, windowMs: 1500 },
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 2 },
    ],
  },
  { spec: { algorithm: "fixed-window", limit: 2, windowMs: 1000 }, ban: BAN },
  { spec: { algorithm: "gcra", limit: 2, periodMs: 1000 }, ban: BAN },
  { spec: { algorithm: "sliding-log", limit: 2, windowMs: 800 }, ban: BAN },
];

/** The (seed, base instant) pairs the test file runs. */
export const RLF_TRACES: Array<{ seed: number; base: number }> = [0, 1.8e12].flatMap((base) =>
  [11, 2026].map((seed) => ({ seed, base })),
);

type Answer = Decision | null | "reset";

/**
 * One trace of 600 events on `io` (a fresh prefix). `expiryGraceMs` is the RedisStore's (its
 * default when undefined); the deny cache is off: it answers repeated denials locally with the
 * figures Redis gave then (by design), and exact parity is the script's.
 */
export async function runRlfTrace(io: Redis, seed: number, base: number, expiryGraceMs?: number): Promise<void> {
  const random = prng(seed);
  const clock = new ManualClock(base);
  const store = new MemoryStore();
  const remote = new RedisStore({
    client: io,
    prefix: uniquePrefix("rlf"),
    denyCache: false,
    // A starved machine's slow answer must not become an onError answer.
    timeoutMs: WORK_BOUND_MS,
    ...(expiryGraceMs === undefined ? {} : { expiryGraceMs }),
  });
  const pairs = RLF_RULES.map((r, i) => {
    const options = { clock, name: `r${i}`, ...(r.ban === undefined ? {} : { ban: r.ban }) };
    return {
      ban: r.ban !== undefined,
      memory: createLimiter(r.spec, { ...options, store }) as Limiter,
      redis: createLimiter(r.spec, { ...options, store: remote }) as Limiter,
    };
  });
  const seen = { penalty: 0, block: 0, plainBlock: 0, nullGet: 0, get: 0, deniedPenalty: 0 };
  for (let i = 0; i < 600; i++) {
    clock.set(clock.now() + Math.floor(random() * 250));
    const pair = pairs[Math.floor(random() * pairs.length)] as (typeof pairs)[number];
    const key = `k${Math.floor(random() * 3)}`;
    const cost = 1 + Math.floor(random() * 3);
    const a = random();
    const run = async (l: Limiter): Promise<Answer> => {
      if (a < 0.4) return l.tryAcquire(key, cost);
      if (a < 0.5) return l.peek(key, cost);
      if (a < 0.55) return l.refund(key, cost);
      if (a < 0.58) {
        await l.reset(key);
        return "reset";
      }
      if (a < 0.72) return l.penalty(key, cost);
      if (a < 0.8) return l.block(key, cost * 400);
      return l.get(key);
    };
    const expected = await run(pair.memory);
    const actual = await run(pair.redis);
    expect(actual, `seed ${seed}, event ${i}, t=${clock.now()}, rule ${pairs.indexOf(pair)}, ${key}`).toEqual(expected);
    if (a >= 0.58 && a < 0.72) {
      seen.penalty++;
      if (!(expected as Decision).allowed) seen.deniedPenalty++;
    } else if (a >= 0.72 && a < 0.8) {
      seen.block++;
      if (!pair.ban) seen.plainBlock++;
    } else if (a >= 0.58) {
      seen.get++;
      if (expected === null) seen.nullGet++;
    }
  }
  // The trace exercised what it is for: penalties past the limit, blocks, gets both ways.
  expect(seen.deniedPenalty).toBeGreaterThan(5);
  expect(seen.block).toBeGreaterThan(5);
  expect(seen.plainBlock).toBeGreaterThan(5);
  expect(seen.nullGet).toBeGreaterThan(3);
  expect(seen.get - seen.nullGet).toBeGreaterThan(3);
}

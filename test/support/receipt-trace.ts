/**
 * Refund receipts on Redis (the Lua twin, op `r<at>`): the fixed-window case of issue 14, and
 * random traces of checks and refunds that name an earlier check (late or not), decided exactly
 * as the in-process store decides them, for every algorithm and a composite. Shared by
 * test/redis/refund-receipts.test.ts and the Lua mutation run (scripts/mutate-lua.mjs).
 */
import fc from "fast-check";
import type { Redis } from "ioredis";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import { specArb, startArb } from "../properties/arbitraries.ts";
import { uniquePrefix } from "./redis-server.ts";

/** Fixed window, limit 1: A at 999, B at 1,000, A's refund at 1,001, C at 1,002: C is refused. */
export async function runReceiptFixedWindowCase(io: Redis): Promise<void> {
  const clock = new ManualClock(999);
  const store = new RedisStore({ client: io, prefix: uniquePrefix("receipt-fw"), denyCache: false });
  const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { clock, store });
  const a = await limiter.tryAcquire("k");
  clock.set(1000);
  expect((await limiter.tryAcquire("k")).allowed).toBe(true);
  clock.set(1001);
  await limiter.refund("k", { cost: 1, at: a.at as number });
  clock.set(1002);
  expect((await limiter.tryAcquire("k")).allowed).toBe(false);
}

/**
 * 60 random traces with receipts (fast-check seed 15); returns how many receipts were refunded.
 * `firstFailure` skips shrinking (the mutation run only needs to know that one failed).
 */
export async function runReceiptTraces(io: Redis, firstFailure = false): Promise<number> {
  let receipts = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        specArb(true).map((s) => [s] as AlgorithmSpec[]),
        fc.tuple(specArb(true), specArb(true)).map(([a, b]) => [a, b] as AlgorithmSpec[]),
      ),
      startArb,
      fc.array(
        fc.record({
          gap: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 2500 })),
          cost: fc.integer({ min: 1, max: 3 }),
          refund: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined, freq: 3 }),
        }),
        { minLength: 5, maxLength: 40 },
      ),
      async (specs, start, steps) => {
        const a = new ManualClock(start);
        const b = new ManualClock(start);
        const store = new RedisStore({
          client: io,
          prefix: uniquePrefix("receipts"),
          expiryGraceMs: 600_000, // a ManualClock runs slower than real time
          denyCache: false,
        });
        const onRedis = createLimiter(specs, { clock: a, store });
        const inProcess = createLimiter(specs, { clock: b, store: new MemoryStore() });
        const taken: Array<{ at: number; cost: number }> = [];
        for (const step of steps) {
          a.advance(step.gap);
          b.advance(step.gap);
          const pick = step.refund === undefined ? undefined : taken[taken.length - 1 - step.refund];
          if (pick !== undefined) {
            receipts++;
            expect(await onRedis.refund("k", pick)).toEqual(inProcess.refund("k", pick));
            continue;
          }
          const d = (await onRedis.tryAcquire("k", step.cost)) as Decision;
          expect(d).toEqual(inProcess.tryAcquire("k", step.cost));
          if (d.allowed) taken.push({ at: d.at as number, cost: step.cost });
        }
      },
    ),
    { numRuns: 60, seed: 15, endOnFailure: firstFailure },
  );
  return receipts;
}

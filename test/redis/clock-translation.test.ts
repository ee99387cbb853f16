// docs/semantics.md §5 on Redis: the Lua twins decide a trace identically at clock 0 and at
// today's epoch, for all six algorithms at rates from 1/h to 1e9/min, and identically to the
// MemoryStore. GCRA records written by earlier versions (a bare, possibly fractional, arrival
// time) are read rounded up: never admitting more than they would have.
import fc from "fast-check";
import { ALGORITHMS, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { EPOCH, eventsArb, runEvents, shiftFor, wideSpecArb } from "../support/clock-translation.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("clock translation (standalone)");

const SEED = 190_119;

describe.skipIf(redis === undefined)("clock translation, RedisStore", () => {
  const clients = useStandaloneClients(redis);
  const store = () =>
    new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("translation"),
      // A ManualClock runs apart from real time: keep keys past their (manual) fresh time.
      expiryGraceMs: 600_000,
      denyCache: false,
    });

  for (const [i, algorithm] of ALGORITHMS.entries()) {
    it(`${algorithm}: a trace decides identically at 0 and at today's epoch, and as in memory`, async () => {
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(
          wideSpecArb(algorithm).chain((spec) => {
            const limit = "limit" in spec ? spec.limit : spec.capacity;
            const period = "windowMs" in spec ? spec.windowMs : "periodMs" in spec ? spec.periodMs : 1000;
            return fc.tuple(fc.constant(spec), eventsArb(limit, period));
          }),
          async ([spec, events]) => {
            const base = await runEvents(spec, store(), 0, events);
            const shifted = await runEvents(spec, store(), shiftFor(spec), events);
            expect(shifted, `${JSON.stringify(spec)} shifted`).toEqual(base);
            expect(base, `${JSON.stringify(spec)} vs memory`).toEqual(
              await runEvents(spec, new MemoryStore(), shiftFor(spec), events),
            );
            runs++;
          },
        ),
        { seed: SEED + i, numRuns: 25 },
      );
      expect(runs).toBeGreaterThanOrEqual(25);
    });
  }

  it("the issue's cases at today's epoch: a burst is a burst, remaining never above the limit", async () => {
    const at = async (spec: Parameters<typeof createLimiter>[0], n: number) => {
      const limiter = createLimiter(spec, { clock: new ManualClock(EPOCH), store: store(), name: "issue" });
      const ds = await Promise.all(Array.from({ length: n }, () => limiter.tryAcquire("k")));
      limiter.close();
      return ds;
    };
    const count = (ds: Decision[]) => ds.filter((d) => d.allowed).length;
    expect(count(await at({ algorithm: "gcra", limit: 100_000, periodMs: 1000, burst: 5 }, 40))).toBe(5);
    expect(count(await at({ algorithm: "leaky-bucket", capacity: 1, leakPerSecond: 50_000 }, 40))).toBe(1);
    expect(count(await at({ algorithm: "gcra", limit: 10_000_000, periodMs: 1000, burst: 100 }, 3000))).toBe(100);
    const [first] = await at({ algorithm: "gcra", limit: 1e9, periodMs: 60_000 }, 1);
    expect(first).toMatchObject({ allowed: true, limit: 1e9, remaining: 999_999_999, resetMs: 1 });
  });

  it("a record an earlier version wrote (a bare arrival time) is read rounded up, never admitting more", async () => {
    const prefix = uniquePrefix("old-gcra");
    const clock = new ManualClock(EPOCH);
    const spec = { algorithm: "gcra", limit: 1000, periodMs: 1000, burst: 3 } as const; // T = 1 ms
    const limiter = createLimiter(spec, {
      clock,
      name: "old",
      store: new RedisStore({ client: clients.io, prefix, denyCache: false, expiryGraceMs: 600_000 }),
    });
    await limiter.tryAcquire("k");
    const [key] = (await clients.io.keys(`${prefix}*`)) as string[];
    expect(await clients.io.get(key as string)).toBe(String(EPOCH + 1)); // a whole ms: the old form
    // The old '%.17g' form of a fractional time 2.5 ms ahead reads as 3 ms ahead.
    await clients.io.set(key as string, "1800000000002.5", "PX", 60_000);
    expect(await limiter.peek("k")).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 3 });
    await clients.io.set(key as string, "-inf", "PX", 60_000);
    expect(await limiter.peek("k")).toMatchObject({ allowed: true, remaining: 2 });
    // A sub-ms arrival time is stored exactly, in ticks.
    const fine = createLimiter(
      { algorithm: "gcra", limit: 3, periodMs: 1, burst: 2 },
      {
        clock,
        name: "fine",
        store: new RedisStore({ client: clients.io, prefix, denyCache: false, expiryGraceMs: 600_000 }),
      },
    );
    await fine.tryAcquire("k");
    const keys = (await clients.io.keys(`${prefix}*`)) as string[];
    const values = await Promise.all(keys.map((k) => clients.io.get(k)));
    expect(values).toContain(`${EPOCH}+1/3`);
    // A foreign value is an error for that check (answered by the failure policy), not a fresh key.
    await clients.io.set(key as string, "garbage", "PX", 60_000);
    const foreign = await limiter.peek("k");
    expect(foreign).toMatchObject({ allowed: false, failure: { policy: "deny" } });
    expect(foreign.failure?.error.message).toMatch(/not a sluice gcra state: garbage/);
    limiter.close();
    fine.close();
  });
});

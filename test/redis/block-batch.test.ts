// Blocked keys (rules without a ban: a hash {s, b}) inside the script's hot path, a uniform batch of
// plain checks under one pcall: at its start, its end, several in a row, the same key twice; while
// blocked, after a reset, and once the block has ended (the record back to a plain string). Every
// answer equals the MemoryStore's, so each check is counted exactly once.
// Durations are 100 s, not 1 s: Redis expires keys in real time (PEXPIRE from the ManualClock's
// horizon), and on a loaded machine the calls between two clock steps took longer than a 200 ms
// gcra interval, so Redis forgot a key the manual clock still held (a flake, not a product bug).
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore, type Store } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("blocked keys in a batch");
const T0 = Date.UTC(2026, 11, 1);
const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: 5, windowMs: 100_000 },
  { algorithm: "gcra", limit: 5, periodMs: 100_000 },
  { algorithm: "token-bucket", capacity: 5, refillPerSecond: 0.05 },
  { algorithm: "sliding-log", limit: 5, windowMs: 100_000 },
  { algorithm: "sliding-window", limit: 5, windowMs: 100_000 },
  { algorithm: "fixed-window", limit: 5, windowMs: 100_000, anchor: "first" },
];
/** B: a blocked key; letters: plain keys (repeated: the same key twice in one batch). */
const LAYOUTS = [
  ["B", "B", "a", "B", "b", "B"],
  ["a", "B", "B", "B", "b"],
  ["B"],
  ["a", "b", "B"],
  ["B", "a", "B", "a", "B", "a"],
];

describe.skipIf(redis === undefined)("blocked keys in a uniform batch of checks: Redis = MemoryStore", () => {
  const clients = useStandaloneClients(redis);
  for (const spec of SPECS) {
    for (const [li, layout] of LAYOUTS.entries()) {
      it(`${spec.algorithm}${"anchor" in spec ? " first" : ""} layout ${li}`, async () => {
        for (const withClock of [true, false]) {
          const prefix = uniquePrefix("block-batch");
          const clock = new ManualClock(T0);
          const mem = new MemoryStore();
          const mk = (store: Store) =>
            createLimiter(spec, withClock ? { clock, store, name: "p" } : { store, name: "p" });
          const r = mk(new RedisStore({ client: clients.io, prefix, denyCache: false }));
          const m = mk(mem);
          const keys = layout.map((x, i) => (x === "B" ? `blk${i}` : x));
          for (const k of keys)
            if (k.startsWith("blk")) {
              await r.tryAcquire(k);
              m.tryAcquire(k);
              await r.block(k, 6_000_000);
              m.block(k, 6_000_000);
            }
          const got = await Promise.all(keys.map((k) => r.tryAcquire(k)));
          const want = keys.map((k) => m.tryAcquire(k));
          if (withClock) expect(got).toEqual(want);
          else
            got.forEach((d, i) => {
              expect(d.allowed, keys[i]).toBe((want[i] as Decision).allowed);
              expect(d.banned, keys[i]).toBe((want[i] as Decision).banned);
              expect(d.remaining, keys[i]).toBe((want[i] as Decision).remaining);
            });
          const got2 = await Promise.all(keys.map((k) => r.peek(k)));
          const want2 = keys.map((k) => m.peek(k));
          if (withClock) expect(got2).toEqual(want2);
          for (const k of keys)
            if (k.startsWith("blk")) {
              await r.reset(k);
              m.reset(k);
            }
          if (withClock) {
            for (const k of keys)
              if (k.startsWith("blk")) {
                await r.block(k, 5000);
                m.block(k, 5000);
              }
            clock.set(T0 + 6000);
            const g = await Promise.all(keys.map((k) => r.tryAcquire(k)));
            expect(g).toEqual(keys.map((k) => m.tryAcquire(k)));
            const g2 = await Promise.all(keys.map((k) => r.tryAcquire(k)));
            expect(g2).toEqual(keys.map((k) => m.tryAcquire(k)));
            for (const k of await clients.io.keys(`${prefix}*`)) expect(await clients.io.type(k), k).toBe("string");
            clock.set(T0 + 10_000);
            const got3 = await Promise.all(keys.map((k) => r.tryAcquire(k)));
            expect(got3).toEqual(keys.map((k) => m.tryAcquire(k)));
          }
        }
      });
    }
  }
});

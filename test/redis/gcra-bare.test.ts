// gcra and leaky-bucket rules whose emission interval is whole ms (den 1) are decided by their own
// loop in a batch of plain checks (gcra.lua's em_bare: the record read by arithmetic, em_step's
// admitting path and the write inline). Seeded walks at fractional instants, with costs above the
// burst, far-ahead backlogs, batches of distinct keys (one MGET) and batches with a key twice (a
// GET per check): every answer equals the MemoryStore's, and each key's expiry is what the
// MemoryStore's state still needs; a foreign value fails its own check alone.
import { Redis } from "ioredis";
import { type AlgorithmSpec, createLimiter, ManualClock, MemoryStore, type Store } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const can = await canStartRedis("whole-ms gcra loop");
const T0 = Date.UTC(2026, 11, 1);
const SEED = Number(process.env.SEED ?? 38);
const SPECS: AlgorithmSpec[] = [
  { algorithm: "gcra", limit: 4, periodMs: 2_000 }, // 500 ms per request
  { algorithm: "gcra", limit: 10, periodMs: 1_000, burst: 3 }, // 100 ms, burst below the limit
  { algorithm: "leaky-bucket", leakPerSecond: 2, capacity: 3 }, // 500 ms, reports delayMs
];
const KEYS = ["a", "b", "c", "d", "e", "f"];

describe.skipIf(!can)("gcra with a whole-ms interval: the member's own batch loop", () => {
  let server: OwnedRedis;
  let client: Redis;
  beforeAll(async () => {
    server = (await startOwnedRedis()) as OwnedRedis;
    client = new Redis(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.dispose();
  });

  it.each(SPECS.map((spec, i) => [i, spec] as const))("spec %i decides as the MemoryStore", async (i, spec) => {
    console.log(`gcra-bare: seed ${SEED} (SEED=${SEED} replays it)`);
    const random = mulberry32(SEED * 97 + i);
    const clock = new ManualClock(T0 + 0.25);
    const prefix = `bare${i}:`;
    const mk = (store: Store) => createLimiter(spec, { clock, store, name: "r" });
    const redis = mk(new RedisStore({ client, prefix, denyCache: false }));
    const memory = mk(new MemoryStore());
    for (let step = 0; step < 120; step++) {
      // Moves of 0 to ~1.2 s, often to a fractional instant.
      const move = Math.floor(random() * 1200) + (random() < 0.5 ? Math.floor(random() * 1000) / 1000 : 0);
      clock.advance(move);
      // Distinct keys (one MGET) or with a key twice (a GET per check).
      const n = 1 + Math.floor(random() * 5);
      const keys = Array.from({ length: n }, () => KEYS[Math.floor(random() * KEYS.length)] as string);
      // Mostly cost 1; sometimes above the burst; sometimes a run on one key that pushes its
      // backlog far ahead.
      const r = random();
      const cost = r < 0.8 ? 1 : r < 0.9 ? 2 : 4;
      if (r >= 0.95) keys.push(...Array.from({ length: 8 }, () => keys[0] as string));
      const got = await Promise.all(keys.map((k) => redis.tryAcquire(k, cost)));
      const want = keys.map((k) => memory.tryAcquire(k, cost));
      expect(got, `seed ${SEED}, step ${step}, keys ${keys.join(",")}, cost ${cost}`).toEqual(want);
    }
    // One last batch of every key at one instant: an admitted key's expiry is when its state is
    // fresh again, its resetMs (PTTL counts down in real time meanwhile: a few ms at most).
    clock.advance(0.5);
    const got = await Promise.all(KEYS.map((k) => redis.tryAcquire(k)));
    expect(got).toEqual(KEYS.map((k) => memory.tryAcquire(k)));
    for (const [j, key] of KEYS.entries()) {
      const d = got[j];
      if (d === undefined || !d.allowed) continue;
      const [record] = await client.keys(`${prefix}*${key}`);
      const ttl = await client.pttl(record as string);
      expect(ttl, key).toBeLessThanOrEqual(d.resetMs);
      expect(ttl, key).toBeGreaterThan(d.resetMs - 1_000);
    }
    // A foreign value in the middle of a batch stops the loop at that check: it fails alone
    // (answered by the failure policy), and the checks before and after it decide as before.
    // Two of them: the loop starts again after each.
    for (const key of ["c", "e"]) {
      const [foreign] = await client.keys(`${prefix}*${key}`);
      await client.set(foreign as string, "garbage");
    }
    clock.advance(700);
    const mixed = await Promise.all(KEYS.map((k) => redis.tryAcquire(k)));
    for (const [j, key] of KEYS.entries()) {
      if (key === "c" || key === "e") {
        expect(mixed[j]?.failure?.error.message).toMatch(/not a sluice gcra state: garbage/);
        continue;
      }
      expect(mixed[j], key).toEqual(memory.tryAcquire(key));
    }
  });
});

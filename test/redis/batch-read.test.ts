// A uniform batch whose keys are distinct reads every record with one MGET (check.lua's readAll);
// a batch with a key twice, or holding a key MGET cannot read (a blocked key's hash, a foreign
// value), reads each with its own GET. Commands are counted on a private redis-server (INFO
// commandstats: no other suite's commands), and every answer equals the MemoryStore's.
import { Redis } from "ioredis";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore, type Store } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const can = await canStartRedis("one read per batch");
const T0 = Date.UTC(2026, 11, 1);
const SPECS: AlgorithmSpec[] = [
  { algorithm: "gcra", limit: 3, periodMs: 100_000 },
  { algorithm: "fixed-window", limit: 3, windowMs: 100_000 },
  { algorithm: "sliding-window", limit: 3, windowMs: 100_000 },
];

describe.skipIf(!can)("one read per batch: MGET for distinct keys, GET otherwise", () => {
  let server: OwnedRedis;
  let client: Redis;
  let admin: Redis;
  let run = 0;
  beforeAll(async () => {
    server = (await startOwnedRedis()) as OwnedRedis;
    client = new Redis(server.url);
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.dispose();
  });

  /** Calls of each command the server ran while `work` ran (INFO's own left out). */
  async function counted(work: () => Promise<unknown>): Promise<Record<string, number>> {
    const read = async () => {
      const out: Record<string, number> = {};
      for (const m of (await admin.info("commandstats")).matchAll(/cmdstat_(\w+):calls=(\d+)/g)) {
        out[m[1] as string] = Number(m[2]);
      }
      return out;
    };
    const before = await read();
    await work();
    const after = await read();
    const delta: Record<string, number> = {};
    for (const [name, calls] of Object.entries(after)) {
      const d = calls - (before[name] ?? 0);
      if (d > 0 && name !== "info") delta[name] = d;
    }
    return delta;
  }

  /** A Redis limiter and a MemoryStore one on the same ManualClock. */
  function pair(spec: AlgorithmSpec) {
    const clock = new ManualClock(T0);
    const mk = (store: Store) => createLimiter(spec, { clock, store, name: "r" });
    const store = new RedisStore({ client, prefix: `br${run++}:`, denyCache: false });
    return { clock, redis: mk(store), memory: mk(new MemoryStore()), prefix: `br${run - 1}:` };
  }

  /** One batch (all in one turn) of checks of `keys`, on both; the Redis answers. */
  async function batch(p: ReturnType<typeof pair>, keys: string[]): Promise<Decision[]> {
    const got = await Promise.all(keys.map((k) => p.redis.tryAcquire(k)));
    expect(got).toEqual(keys.map((k) => p.memory.tryAcquire(k)));
    return got;
  }

  it("a user refused MGET: every check reads its own, and the batch is decided", async () => {
    await admin.call("ACL", "SETUSER", "nomget", "on", "nopass", "~*", "&*", "+@all", "-mget");
    const limited = new Redis(server.url, { username: "nomget", password: "x" });
    try {
      const clock = new ManualClock(T0);
      const spec: AlgorithmSpec = { algorithm: "gcra", limit: 3, periodMs: 100_000 };
      const redis = createLimiter(spec, {
        clock,
        name: "r",
        store: new RedisStore({ client: limited, prefix: "nomget:" }),
      });
      const memory = createLimiter(spec, { clock, name: "r", store: new MemoryStore() });
      const keys = ["a", "b", "c", "d"];
      for (let round = 0; round < 2; round++) {
        const seen = await counted(async () => {
          const got = await Promise.all(keys.map((k) => redis.tryAcquire(k)));
          expect(got).toEqual(keys.map((k) => memory.tryAcquire(k)));
        });
        expect(seen.get).toBe(keys.length);
      }
    } finally {
      limited.disconnect();
    }
  });

  for (const spec of SPECS) {
    it(`${spec.algorithm}: distinct keys, absent then stored: one MGET, no GET`, async () => {
      const p = pair(spec);
      const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
      // All absent: MGET, then EXISTS says none is there.
      // (The server's first FCALL finds no library: loaded, then called again.)
      expect(await counted(() => batch(p, keys))).toMatchObject({ mget: 1, exists: 1 });
      p.clock.advance(1000);
      const again = await counted(() => batch(p, keys));
      expect(again).toMatchObject({ fcall: 1, mget: 1 });
      expect(again.get).toBeUndefined();
      expect(again.exists).toBeUndefined();
      // Half stored, half new.
      p.clock.advance(1000);
      const mixed = await counted(() => batch(p, [...keys.slice(0, 10), "n1", "n2", "n3"]));
      expect(mixed).toMatchObject({ mget: 1, exists: 1 });
      expect(mixed.get).toBeUndefined();
    });

    it(`${spec.algorithm}: a key twice in a batch is read by GET, each time after the last write`, async () => {
      const p = pair(spec);
      const keys = ["a", "b", "a", "c", "a", "a"];
      const first = await counted(() => batch(p, keys));
      expect(first.mget).toBeUndefined();
      expect(first.get).toBe(keys.length);
      // The fourth "a" is denied (limit 3): each read saw the write before it.
      const again = await Promise.all(["a", "b", "a"].map((k) => p.redis.tryAcquire(k)));
      expect(again.map((d) => d.allowed)).toEqual(
        ["a", "b", "a"].map((k) => (p.memory.tryAcquire(k) as Decision).allowed),
      );
    });

    it(`${spec.algorithm}: a blocked key or a foreign value among distinct keys: every check reads its own`, async () => {
      const p = pair(spec);
      await p.redis.tryAcquire("blocked");
      p.memory.tryAcquire("blocked");
      await p.redis.block("blocked", 50_000);
      p.memory.block("blocked", 50_000);
      await batch(p, ["x", "y"]);
      const blocked = await counted(() => batch(p, ["x", "blocked", "y", "z"]));
      // Each check reads its own (the blocked key three times: the hot path, `decide`, `run`).
      expect(blocked.get).toBeGreaterThanOrEqual(4);
      expect(blocked).toMatchObject({ mget: 1, exists: 1 });
      // A foreign value (a list) at one record key: that check fails alone, the others are decided once.
      await p.redis.tryAcquire("f");
      const foreign = (await admin.keys(`${p.prefix}*`)).find((k) => k.endsWith("f")) as string;
      await admin.del(foreign);
      await admin.rpush(foreign, "not a record");
      const got = await Promise.all(["x", "f", "y"].map((k) => p.redis.tryAcquire(k)));
      expect(got[1]?.failure?.error.message).toMatch(/WRONGTYPE/);
      expect([got[0], got[2]]).toEqual(["x", "y"].map((k) => p.memory.tryAcquire(k)));
    });

    it(`${spec.algorithm}: a string that is no record, read by MGET, fails its check alone`, async () => {
      const p = pair(spec);
      await batch(p, ["u", "v", "w"]);
      const [v] = await admin.keys(`${p.prefix}*v`);
      await admin.set(v as string, "not a record");
      p.clock.advance(1000);
      p.memory.tryAcquire("v");
      const keys = ["u", "v", "w", "n"];
      const seen = await counted(async () => {
        const got = await Promise.all(keys.map((k) => p.redis.tryAcquire(k)));
        expect(got[1]?.failure?.error.message).toMatch(/the sluice script failed/);
        expect([got[0], got[2], got[3]]).toEqual(["u", "w", "n"].map((k) => p.memory.tryAcquire(k)));
      });
      expect(seen).toMatchObject({ mget: 1 });
    });
  }
});

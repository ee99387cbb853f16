// Attack on the fleet queue (issue 32): keys with odd characters. A key cut through a surrogate
// pair (e.g. `name.slice(0, 8)` of a name with an emoji) is a valid JS string: a job of that key
// waiting in one process must start when another process's job of the key ends.
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue: attack, keys");

describe.skipIf(redis === undefined)("fleet queue attack: keys with odd characters", () => {
  const prefix = uniquePrefix("attack-keys");
  const opened: RedisStore[] = [];
  afterAll(async () => {
    for (const s of opened) await s.close();
  });

  async function owner() {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix, timeoutMs: 2000 });
    opened.push(store);
    return createThrottle({ name: "keys", store, clock: systemClock, concurrency: 1 });
  }

  async function handOff(key: string): Promise<string> {
    const [a, b] = [await owner(), await owner()];
    let release!: () => void;
    // Waits for a's job to start (a fixed sleep raced it on a loaded machine: release unset).
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const held = a.schedule(
      () =>
        new Promise<void>((r) => {
          release = r;
          started();
        }),
      { key },
    );
    await running;
    const waiting = b.schedule(async () => "b ran", { key, maxWaitMs: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    release();
    await held;
    try {
      return await waiting.catch((e: Error) => e.name);
    } finally {
      await a.close();
      await b.close();
    }
  }

  it("a hash tag, an emoji, a NUL and a 20,000-character key hand off across processes", {
    timeout: 30_000,
  }, async () => {
    for (const key of ["{tag}x", "😀{x}", "a\u0000b", "k".repeat(20_000)]) expect(await handOff(key)).toBe("b ran");
  });

  // Cause: the grant PUBLISHed to the other process carries the key as Redis holds it (UTF-8, the
  // lone surrogate replaced by U+FFFD) in queue.lua's message { k = userKey }; fleet-queue.ts hands
  // it to the runner, which finds no such key (runner.ts fleetGranted) and drops the grant: the job
  // waits until maxWaitMs (forever without it) while its lease is held.
  it("a key cut through a surrogate pair hands off across processes", { timeout: 30_000 }, async () => {
    expect(await handOff("user-\uD83D")).toBe("b ran");
  });
});

// The queue's rate record is the limiter's own (one name for a key: keys.ts recordKeyOf). It
// named its records with the key as sent, so a lone-surrogate key's queue took its units from a
// record ("…\uFFFD" in Redis) that the limiter never reads: a throttle of the same name without
// the fleet queue (or a fleet pause's block) saw the key's rate unspent.
describe.skipIf(redis === undefined)("fleet queue: a key's records are the limiter's, by the same name", () => {
  for (const key of ["user-plain", "user-\uD83D", "\u0001escaped"]) {
    it(`a unit the queue took is spent for the limiter too: ${JSON.stringify(key)}`, { timeout: 20_000 }, async () => {
      const prefix = uniquePrefix("attack-keys-record");
      const store = await RedisStore.connect({ url: redis?.url ?? "", prefix, timeoutMs: 2000 });
      const rate = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 } as const;
      const queued = createThrottle({ name: "records", store, clock: systemClock, rate });
      const direct = createThrottle({ name: "records", store, clock: systemClock, rate, fleet: false });
      try {
        expect(await queued.schedule(async () => "ran", { key })).toBe("ran");
        const second = await direct.schedule(async () => "ran", { key, maxWaitMs: 200 }).catch((e: Error) => e.name);
        expect(second).toBe("WaitTimeoutError");
      } finally {
        await queued.close();
        await direct.close();
        await store.close();
      }
    });
  }
});

// A bucket unit's start up to its slot's start is not late (core/unit-slot.ts, issue 32): a job
// granted behind a backlog may start that much after its grant with no store call, where a move
// (a refund by receipt that gives a gcra nothing back once a unit's interval passed, and a new
// check) cost the rate a unit each time: a busy process on a shared store ran at a fraction of
// its rate (attack8 F1). Past its slot (and the lag the rate was widened for) it still moves.
import { Redis } from "ioredis";
import { createLimiter, createThrottle, ManualClock, MemoryStore, type Store } from "sluice";
import { RedisStore } from "sluice/redis";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix } from "../../test/support/redis-server.ts";
import type { FleetQueue } from "../core/fleet-queue.ts";

const T0 = Date.UTC(2026, 11, 7, 12);
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe("a late start within its unit's slot (a local limiter)", () => {
  // gcra 50/s, burst 5: T = 20 ms. Four units taken first: the job's unit waits 80 ms of backlog.
  const RATE = { algorithm: "gcra", limit: 50, periodMs: 1000, burst: 5 } as const;
  for (const [stallMs, moved] of [
    [60, false], // inside its slot (slack 79 ms): no move, the record as granted
    [120, true], // past it: moved to its real start
  ] as const) {
    it(`a stall of ${stallMs} ms: ${moved ? "moved" : "not moved"}`, async () => {
      const clock = new ManualClock(T0);
      const store = new MemoryStore();
      const throttle = createThrottle({ name: "slot", store, clock, rate: RATE });
      const other = createLimiter(RATE, { store, clock, name: "throttle:slot" });
      expect(other.tryAcquire("default", 4).allowed).toBe(true);
      throttle.on("start", () => clock.advance(stallMs));
      let ran = 0;
      const done = throttle.schedule(() => void ran++);
      await settle();
      await done;
      expect(ran).toBe(1);
      // Its own record: 5 units taken at T0 (backlog 100 ms). A move at +stall gives back nothing
      // (20 − stall < 0) and takes one more at the real start (20 ms past it, or past the rest).
      const backlog = Math.max(0, 100 - stallMs) + (moved ? 20 : 0);
      // A peek of one unit: what would still pass after it.
      expect(other.peek("default").remaining).toBe(Math.floor((100 - backlog - 20) / 20));
      await throttle.close();
    });
  }
});

/** Counts the restamp calls of the throttles opened on `store` (their fleet queue's `m` op). */
function countRestamps(store: Store & { openFleetQueue(config: unknown): Promise<FleetQueue> }) {
  const counter = { calls: 0 };
  const open = store.openFleetQueue.bind(store);
  store.openFleetQueue = async (config) => {
    const queue = await open(config);
    const restamp = queue.restamp?.bind(queue);
    if (restamp !== undefined) {
      queue.restamp = (...args: Parameters<typeof restamp>) => {
        counter.calls++;
        return restamp(...args);
      };
    }
    return queue;
  };
  return counter;
}

/** Busy-waits `ms` (a stalled event loop: the store's clock is the real one). */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin
  }
}

const redis = await standaloneRedis("late start slot on Redis");

// gcra 10/s, burst 5 (start-safe: 4): T = 100 ms. Four jobs granted at once have slots 0, 100,
// 200 and 300 ms past their grant; the fourth's start listener stalls 150 ms: past the lag the
// rate was widened for (100 ms), within its slot.
const FLEET_RATE = { algorithm: "gcra", limit: 10, periodMs: 1000, burst: 5 } as const;

async function fleetCase(store: Store & { openFleetQueue(config: unknown): Promise<FleetQueue> }) {
  const counter = countRestamps(store);
  const name = uniquePrefix("slot32-slot").replace(/[^a-z0-9-]/gi, "-");
  const throttle = createThrottle({ name, store, rate: FLEET_RATE });
  let starts = 0;
  throttle.on("start", () => {
    if (++starts === 4) stall(150);
  });
  const done = [0, 1, 2, 3].map(() => throttle.schedule(() => undefined));
  await Promise.all(done);
  await throttle.close();
  return counter.calls;
}

describe("a late start within its unit's slot (a fleet queue)", () => {
  it.skipIf(redis === undefined)("Redis: the grant carries its slot; no restamp call", async () => {
    const client = new Redis(redis?.url ?? "");
    const store = new RedisStore({ client, prefix: uniquePrefix("slot32-slot"), timeoutMs: 10_000 });
    try {
      expect(await fleetCase(store as never)).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  it("SharedMemoryStore: the host's grant carries its slot; no restamp call", async () => {
    const store = new SharedMemoryStore({ maxKeys: 100 });
    try {
      expect(await fleetCase(store as never)).toBe(0);
    } finally {
      await store.close?.();
    }
  });
});

// gcra 10/s, burst 2 (start-safe: 1): T = 100 ms, no backlog allowed. Two jobs: the first granted
// now, the second ahead, 100 ms on. The first's listener stalls 150 ms: its move finds the bucket
// taken until 200 ms; refused there, it asked again on its own timer (a second call, while the
// queue could grant later tickets); now its unit is taken at that instant, in the one call.
// (On the host's own thread the stall holds the host too, so the instants are the test's; queue.lua
// does the same on Redis, where a second job's own late start makes the count vary.)
const AHEAD_RATE = { algorithm: "gcra", limit: 10, periodMs: 1000, burst: 2 } as const;

async function aheadCase(store: Store & { openFleetQueue(config: unknown): Promise<FleetQueue> }) {
  const counter = countRestamps(store);
  const name = uniquePrefix("slot32-ahead").replace(/[^a-z0-9-]/gi, "-");
  const throttle = createThrottle({ name, store, rate: AHEAD_RATE });
  let starts = 0;
  throttle.on("start", () => {
    if (++starts === 1) stall(150);
  });
  let ran = 0;
  await Promise.all([0, 1].map(() => throttle.schedule(() => void ran++)));
  await throttle.close();
  return { calls: counter.calls, ran };
}

describe("a late start's move refused for a moment takes its unit ahead (a fleet queue)", () => {
  it("SharedMemoryStore: one restamp call", async () => {
    const store = new SharedMemoryStore({ maxKeys: 100 });
    try {
      expect(await aheadCase(store as never)).toEqual({ calls: 1, ran: 2 });
    } finally {
      await store.close?.();
    }
  });
});

/**
 * Edges for the algorithm twins' steps at instants the other edges and traces do not land on
 * exactly: gcra at binary fractions of a ms (exact at epoch magnitudes, where a third of a ms is
 * not), token buckets at rates where float rounding decides admission and the retry hint, and a
 * sliding window's penalty in the window after the stored one. Each compares the
 * RedisStore's answers with the MemoryStore's at fixed instants (2026-12-01 epoch). Shared by
 * test/redis/parity.test.ts and the Lua mutation run (scripts/mutate-lua.mjs).
 */
import { createLimiter, type Limiter, ManualClock, MemoryStore } from "sluice";
import { RedisStore } from "sluice/redis";
import { expect } from "vitest";
import { type Step, scenario } from "./lua-edges.ts";
import type { ParityEdge } from "./parity-edges.ts";
import { uniquePrefix } from "./redis-server.ts";

/** 2026-12-01T00:00:00Z. */
const T = Date.UTC(2026, 11, 1);

/** The edges, in the order they run. */
export const LUA_STEP_EDGES: ParityEdge[] = [
  {
    name: "gcra at quarter ms: a refund a tick after the arrival time, a backlog a tick under the burst 10 ms ahead",
    algorithms: ["gcra"],
    async run(io) {
      // Emission interval 250.25 ms (4 ticks a ms). 4 units at T: arrival time T+1001 exactly.
      // A quarter ms later a refund finds nothing ahead: the state stays, a get finds it fresh.
      await scenario(io, { algorithm: "gcra", limit: 4, periodMs: 1001 }, [
        [0, "c", "k", 4],
        [1001.25, "r", "k", 1],
        [1001.25, "g", "k", 1],
        [1001.5, "x", "k", 1],
        [1001.5, "g", "k", 1],
        [1001.75, "c", "k", 1],
      ]);
      // Emission interval 1/4 ms (1 tick), burst 40 (10 ms): full at T, then a tick later the
      // backlog is 39 ticks, 10 whole ms ahead, and one unit fits.
      await scenario(io, { algorithm: "gcra", limit: 40, periodMs: 10 }, [
        [0, "c", "j", 40],
        [0.25, "p", "j", 1],
        [0.25, "c", "j", 1],
        [0.25, "c", "j", 1],
        [0.5, "c", "j", 1],
      ]);
    },
  },
  {
    name: "sliding window: a penalty in the window after the stored one keeps that window as the previous",
    algorithms: ["sliding-window"],
    async run(io) {
      await scenario(io, { algorithm: "sliding-window", limit: 4, windowMs: 1000 }, [
        [0, "c", "k", 2],
        [1500, "x", "k", 1],
        [1500, "p", "k", 1],
        [1600, "c", "k", 1],
        [2500, "x", "k", 1],
        [2500, "g", "k", 1],
      ]);
      // A refund that empties the current window while the previous still weighs: the state
      // (previous 1, current 0) is fresh one window after its start, not two.
      await scenario(io, { algorithm: "sliding-window", limit: 4, windowMs: 1000 }, [
        [0, "c", "j", 1],
        [1100, "c", "j", 1],
        [1500, "r", "j", 1],
        ...[1600, 1999, 2000, 2001].map((t): Step => [t, "g", "j", 1]),
      ]);
    },
  },
  {
    name: "token bucket where float rounding decides: a balance exactly at need, a retry hint one ms early or one ms late",
    algorithms: ["token-bucket"],
    async run(io) {
      // 499.9999995 tokens/s, 1 spent at T: at T+2 the balance is 999.999999 thousandths, and
      // + EPSILON (1e-6) it is exactly 1000 in doubles: admitted (`>=`, not `>`). At T+1 the
      // hint is 1 ms and the balance then lands on that same tie: the retry stays 1 ms.
      const tie = { algorithm: "token-bucket", capacity: 1, refillPerSecond: 499.9999995 } as const;
      await scenario(io, tie, [
        [0, "c", "k", 1],
        [2, "c", "k", 1],
      ]);
      await scenario(io, tie, [
        [0, "c", "j", 1],
        [1, "c", "j", 1],
      ]);
      // 499.999999 tokens/s: at T+1 the hint rounds (1.000000004 - EPSILON) up to 1 ms, but then
      // the balance is 1e-6 short: the correction loop runs once and answers 2 ms.
      await scenario(io, { algorithm: "token-bucket", capacity: 1, refillPerSecond: 499.999999 }, [
        [0, "c", "k", 1],
        [1, "c", "k", 1],
        [1, "p", "k", 1],
      ]);
      // 1 token in 1,000 s (eps/r = 1e-3 ms): 4,095/4,096 ms past a whole ms, 5.000244 ms of
      // refill are missing; the hint is 6 ms although 5 ms would pass (EPSILON absorbs the rest),
      // and both stores answer 6.
      await scenario(io, { algorithm: "token-bucket", capacity: 1, refillPerSecond: 0.001 }, [
        [0, "c", "k", 1],
        [999_994 + 4095 / 4096, "c", "k", 1],
      ]);
    },
  },
  {
    name: "sliding-log under a lowered limit: a request of 2 finds the oldest unit that still counts past the skipped ones",
    algorithms: ["sliding-log"],
    async run(io) {
      // Runs of 2 at 0, 100 and 200 under limit 6, then limit 3 (as updateRule does): 3 units
      // are skipped, one of them inside the run at 100; a request of 2 waits for the run at 200.
      const clock = new ManualClock(T);
      const remote = new RedisStore({
        client: io,
        prefix: uniquePrefix("lua-step-edges"),
        denyCache: false,
        expiryGraceMs: 600_000,
      });
      const local = new MemoryStore();
      const on = (limit: number, store: RedisStore | MemoryStore) =>
        createLimiter({ algorithm: "sliding-log", limit, windowMs: 1000 }, { clock, store, name: "low" }) as Limiter;
      for (const [at, limit, cost] of [
        [0, 6, 2],
        [100, 6, 2],
        [200, 6, 2],
        [300, 3, 2],
        [300, 3, 1],
        [1150, 3, 1],
      ] as const) {
        clock.set(T + at);
        expect(await on(limit, remote).tryAcquire("k", cost), `limit ${limit}, ${cost} at T+${at}`).toEqual(
          await on(limit, local).tryAcquire("k", cost),
        );
      }
    },
  },
];

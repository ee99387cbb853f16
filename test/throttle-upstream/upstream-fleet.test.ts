// From outside: 4 real processes share one throttle on real Redis and call a real upstream with
// its own limit (test/support/upstream-server.mjs, 5 a second, 429 + Retry-After or the
// RateLimit field past it) through `throttle.fetch`. With one request at a time across the fleet,
// the upstream answers at most one 429 per window (each pause's first is its only one), and every
// caller ends with a 200. (With the pause cut to 1 ms, `maxPauseMs: 1`, the same fleet got 16
// 429s in one window.) A fleet of plain retries (each process waits the Retry-After of its own
// 429s) gets one 429 per process per window. bench/throttle-upstream.mjs runs the same fleets
// beside bottleneck's clustering; docs/throttle.md quotes its figures.
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { runFleet } from "./run-fleet.mjs";

const redis = await standaloneRedis("throttle upstream fleet");
const JOBS = 6;
const rate = { algorithm: "gcra", limit: 50, periodMs: 1000, burst: 1 };

describe.skipIf(redis === undefined)("4 processes calling a rate-limited upstream", () => {
  beforeAll(() => ensureBuilt());

  it.each(["retry-after", "ratelimit"] as const)(
    "throttle.fetch (%s): one 429 per pause, where plain retries get one per process",
    {
      timeout: 120_000,
    },
    async (header) => {
      const common = { redisUrl: redis?.url ?? "", jobs: JOBS, limit: 5, header };
      const ours = await runFleet({
        ...common,
        mode: "sluice",
        prefix: uniquePrefix("upstream-fleet"),
        // pollMs 10: the fleet hands its one slot on fast enough to outrun the upstream's 5 a second.
        options: { rate, concurrency: 1, pollMs: 10 },
      });
      expect(ours.statuses.filter((s) => s !== 200)).toEqual([]);
      expect(ours.ok).toBe(4 * JOBS);
      // The fleet offers up to 50 a second to an upstream that takes 5: it hits the limit, and stops there.
      expect(ours.tooMany).toBeGreaterThan(0);
      expect(ours.most429InAWindow).toBe(1);

      if (header !== "retry-after") return; // the plain fleet once is enough
      const plain = await runFleet({ ...common, mode: "plain", prefix: uniquePrefix("upstream-plain") });
      expect(plain.statuses.filter((s) => s !== 200)).toEqual([]);
      expect(plain.most429InAWindow).toBeGreaterThanOrEqual(2);
      expect(plain.tooMany).toBeGreaterThan(ours.tooMany);
    },
  );
});

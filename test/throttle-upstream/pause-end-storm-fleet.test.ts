// The end of a pause on a fleet queue does not release the whole queue at once: the store (Redis,
// queue.lua) cools the key down after each pause as the local queue does (coolDownEnd,
// src/core/fleet-queue.ts): one job at a time, for as long as the pause lasted. Found by an
// attack from outside: 3 real processes on Redis, a gcra of 40/s with its full burst against an
// upstream admitting 5 a second (a 429 with Retry-After past that): every waiting job went when a
// pause ended and each one past the upstream's limit got its 429 (112 429s for 36 jobs; 83 in
// bench/throttle-upstream.mjs's burst shape, 25 in one window). The start's own burst, before
// the first pause ended, is not counted (pause-storm-count.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { afterFirstPause } from "./pause-storm-count.ts";
import { runFleet } from "./run-fleet.mjs";

const redis = await standaloneRedis("throttle upstream fleet, pause-end storm");
const WINDOW_MS = 1000;
const rate = { algorithm: "gcra", limit: 40, periodMs: 1000 };

describe.skipIf(redis === undefined)("3 processes on Redis, a burst-allowing rate far above the upstream's", () => {
  beforeAll(() => ensureBuilt());

  it.each([
    ["a rate alone", { rate }],
    ["a rate and concurrency 8 (the cool-down's job holds a lease too)", { rate, concurrency: 8 }],
  ])(
    "%s: after the first pause, at most 2 429s a pause (one job at a time while the key cools down)",
    {
      timeout: 40_000,
    },
    async (_, options) => {
      const r = await runFleet({
        mode: "sluice",
        redisUrl: redis?.url ?? "",
        prefix: uniquePrefix("pause-end-storm-fleet"),
        processes: 3,
        jobs: 10,
        limit: 5,
        windowMs: WINDOW_MS,
        options,
      });
      expect(r.statuses.filter((s) => s !== 200)).toEqual([]);
      const { after, perPause } = afterFirstPause(r.log, WINDOW_MS);
      console.log(`429s a pause after the first pause: ${JSON.stringify(perPause)} (${r.tooMany} in all)`);
      expect(after).toBeGreaterThan(0);
      expect(Math.max(0, ...perPause)).toBeLessThanOrEqual(2);
    },
  );
});

// `onError` of the fleet queue while Redis cannot be reached (a client of a port nobody listens
// on): "wait" (the default) starts nothing without a grant, and the jobs expire at maxWaitMs;
// `{ instances: 2 }` runs them on this process's half of each limit, locally.
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { deadIoredis } from "../support/redis-server.ts";

async function run(onError: "wait" | { instances: number }) {
  const client = deadIoredis();
  const store = new RedisStore({ client, breaker: false });
  const throttle = createThrottle({
    name: "fallback",
    store,
    clock: systemClock,
    rate: { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 },
    concurrency: 4,
    onError,
  });
  const errors: unknown[] = [];
  throttle.on("error", (e) => errors.push(e.error));
  let running = 0;
  let most = 0;
  const results = await Promise.allSettled(
    Array.from({ length: 12 }, () =>
      throttle.schedule(
        async () => {
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 20));
          running--;
        },
        { maxWaitMs: 1500 },
      ),
    ),
  );
  await throttle.close();
  client.disconnect();
  return { ran: results.filter((r) => r.status === "fulfilled").length, most, errors: errors.length };
}

describe("fleet queue while Redis is down", () => {
  it('"wait": nothing starts without a grant; the jobs expire', { timeout: 20_000 }, async () => {
    const r = await run("wait");
    expect(r.ran).toBe(0);
    expect(r.errors).toBeGreaterThan(0);
  });

  it("{ instances: 2 }: this process's half of each limit, locally", { timeout: 20_000 }, async () => {
    const r = await run({ instances: 2 });
    // Half of 10 an hour, half of 4 at once.
    expect(r.ran).toBe(5);
    expect(r.most).toBe(2);
    expect(r.errors).toBeGreaterThan(0);
  });
});

// A process that closes while the store counts on it to wake the key's head hands that wake-up to
// a process with work. Found by bench/throttle-upstream.mjs: in a concurrency-1 fleet, the
// process finishing its last job was still the waker of the next head (due after the rate's
// spacing); it closed, its timer with it, and the head waited for the survivors' rescue pump
// (3 owner lifetimes: 30 s), so the fleet ran at 11% of the upstream's limit.
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue, close hand-off");

describe.skipIf(redis === undefined)("a closing process on the fleet queue", () => {
  it("hands its wake-up on: the next head starts at its due instant, not at a rescue pump 30 s later", {
    timeout: 20_000,
  }, async () => {
    const prefix = uniquePrefix("fleet-handoff");
    // Two owners (each throttle opens its own queue link), one upstream limit between them.
    const [sa, sb] = await Promise.all([
      RedisStore.connect({ url: redis?.url ?? "", prefix }),
      RedisStore.connect({ url: redis?.url ?? "", prefix }),
    ]);
    const options = {
      name: "h",
      clock: systemClock,
      rate: { algorithm: "gcra", limit: 5, periodMs: 1000, burst: 1 },
      concurrency: 1,
    } as const;
    const a = createThrottle({ ...options, store: sa });
    const b = createThrottle({ ...options, store: sb });
    const ran: string[] = [];
    // A's second job waits behind its first (A is told to wake the key); B's job arrives behind it.
    const a1 = a.schedule(async () => ran.push("a1"));
    const a2 = a.schedule(async () => ran.push("a2"));
    await new Promise((r) => setTimeout(r, 50));
    const b1 = b.schedule(async () => ran.push("b1"));
    await Promise.all([a1, a2]);
    // A's last release left B's head due 200 ms later (the rate's spacing), with A as its waker.
    await a.close();
    const stalled = new Promise((r) => setTimeout(() => r("stalled"), 10_000).unref());
    expect(await Promise.race([b1.then(() => "ran"), stalled])).toBe("ran");
    expect(ran).toEqual(["a1", "a2", "b1"]);
    await b.close();
    await Promise.all([sa.close(), sb.close()]);
  });
});

// A throttle on the Redis fleet queue, in one process: an aborted waiting job and one past its
// maxWaitMs leave the store's queue (they never run, and the job behind them gets the slot);
// close() rejects what still waits and cancels its tickets; close({ drain }) runs it first.
import { describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue, one process");

describe.skipIf(redis === undefined)("a throttle on the fleet queue", () => {
  it("aborts and maxWaitMs take jobs out of the store's queue; the next job gets the slot", {
    timeout: 20_000,
  }, async () => {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix: uniquePrefix("fleet-throttle") });
    const throttle = createThrottle({ name: "t", store, clock: systemClock, concurrency: 1, leaseMs: 10_000 });
    const ran: string[] = [];
    let release = () => {};
    const first = throttle.schedule(async () => {
      ran.push("first");
      await new Promise<void>((r) => (release = r));
    });
    while (ran.length === 0) await new Promise((r) => setTimeout(r, 5));
    const controller = new AbortController();
    const aborted = throttle.schedule(async () => ran.push("aborted"), { signal: controller.signal, priority: 0 });
    const expired = throttle.schedule(async () => ran.push("expired"), { maxWaitMs: 100, priority: 0 });
    const last = throttle.schedule(async () => ran.push("last"), { priority: 9 });
    await new Promise((r) => setTimeout(r, 50));
    controller.abort(new Error("gone"));
    await expect(aborted).rejects.toThrow("gone");
    await expect(expired).rejects.toMatchObject({ code: "ERR_WAIT_TIMEOUT" });
    release();
    await first;
    await last;
    expect(ran).toEqual(["first", "last"]);
    expect(throttle.stats()).toMatchObject({ queued: 0, running: 0, done: 2, failed: 1, expired: 1 });
    // close() rejects what waits; its tickets leave the store (a later throttle is not blocked).
    let hold = () => {};
    let busyRan = false;
    const busy = throttle.schedule(
      () =>
        new Promise<void>((r) => {
          busyRan = true;
          hold = r;
        }),
    );
    while (!busyRan) await new Promise((r) => setTimeout(r, 5));
    const waiting = throttle.schedule(async () => ran.push("never"));
    await new Promise((r) => setTimeout(r, 50));
    const closing = throttle.close();
    await expect(waiting).rejects.toMatchObject({ code: "ERR_THROTTLE_CLOSED" });
    hold();
    await busy;
    await closing;
    const again = createThrottle({ name: "t", store, clock: systemClock, concurrency: 1, leaseMs: 10_000 });
    await again.schedule(async () => ran.push("again"));
    await again.close({ drain: true });
    expect(ran).toEqual(["first", "last", "again"]);
    await store.close();
  });
});

// A running job whose lease is lost is told so, on real Redis (the fleet queue): its signal
// aborts with a LeaseLostError and the throttle emits it as an `error` event. Three ways to
// lose it: the process stalls past leaseMs (the lease expired), the store drops the lease (its
// concurrency record is deleted: a renewal finds nothing), and the server is down for longer than
// leaseMs (no renewal reaches it; a private redis-server, stopped). Before, lease-keeper.ts
// ignored a renewal's answer: the job ran on, unaware that another could hold its slot.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, LeaseLostError, systemClock, type Throttle } from "../../src/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import {
  canStartRedis,
  type OwnedRedis,
  standaloneRedis,
  startOwnedRedis,
  uniquePrefix,
} from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle lease lost");
const canStart = await canStartRedis("throttle lease lost (restart)");

/** Runs one job that waits for its signal (at most `ms`); resolves with the abort's reason. */
function runUntilAborted(throttle: Throttle, during: () => void | Promise<void>, ms = 8000): Promise<unknown> {
  return throttle.schedule(
    ({ signal }) =>
      new Promise((resolve) => {
        const give = setTimeout(() => resolve("never aborted"), ms);
        signal.addEventListener("abort", () => {
          clearTimeout(give);
          resolve(signal.reason);
        });
        void during();
      }),
  );
}

/** The `error` events a throttle emits. */
function errorsOf(throttle: Throttle): unknown[] {
  const errors: unknown[] = [];
  throttle.on("error", ({ error }) => errors.push(error));
  return errors;
}

describe.skipIf(redis === undefined)("a lost lease on the Redis fleet queue", () => {
  it("a stall past leaseMs: the next renewal finds the lease expired", { timeout: 20_000 }, async () => {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix: uniquePrefix("lease-lost-stall") });
    const throttle = createThrottle({ name: "t", store, clock: systemClock, concurrency: 1, leaseMs: 300 });
    const errors = errorsOf(throttle);
    const reason = await runUntilAborted(throttle, () => {
      // The whole process stalls (a long synchronous step, a GC pause): no renewal is sent.
      const end = Date.now() + 500;
      while (Date.now() < end) {}
    });
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(reason).toMatchObject({ code: "ERR_LEASE_LOST" });
    expect(errors.filter((e) => e instanceof LeaseLostError)).toHaveLength(1);
    await throttle.close();
    await store.close();
  });

  it("the store drops the lease: the next renewal finds nothing", { timeout: 20_000 }, async () => {
    const prefix = uniquePrefix("lease-lost-drop");
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix });
    const throttle = createThrottle({ name: "t", store, clock: systemClock, concurrency: 1, leaseMs: 600 });
    const errors = errorsOf(throttle);
    const raw = new Redis(redis?.url ?? "");
    const reason = await runUntilAborted(throttle, async () => {
      // The concurrency record (a string; the queue's own keys are a hash and a sorted set).
      for (const k of await raw.keys(`${prefix}*`)) if ((await raw.type(k)) === "string") await raw.del(k);
    });
    raw.disconnect();
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(errors.filter((e) => e instanceof LeaseLostError)).toHaveLength(1);
    // The slot is free again: the next job runs.
    expect(await throttle.schedule(async () => "next")).toBe("next");
    await throttle.close();
    await store.close();
  });

  describe.skipIf(!canStart)("on a private redis-server", () => {
    let owned: OwnedRedis | undefined;
    afterAll(() => owned?.dispose());

    it("the server is down for longer than leaseMs: the job is told once leaseMs has passed without a renewal", {
      timeout: 20_000,
    }, async () => {
      owned = await startOwnedRedis();
      const store = await RedisStore.connect({ url: owned?.url ?? "", prefix: "lost:", timeoutMs: 200 });
      const throttle = createThrottle({ name: "t", store, clock: systemClock, concurrency: 1, leaseMs: 600 });
      const errors = errorsOf(throttle);
      const started = Date.now();
      let stoppedAt = 0;
      const reason = await runUntilAborted(throttle, async () => {
        await owned?.stop();
        stoppedAt = Date.now();
      });
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect((reason as LeaseLostError).cause).toBeDefined();
      // Not before the lease could have expired in the store.
      expect(Date.now() - Math.min(started, stoppedAt)).toBeGreaterThanOrEqual(600);
      expect(errors.filter((e) => e instanceof LeaseLostError)).toHaveLength(1);
      await owned?.start();
      await throttle.close();
      await store.close();
    });
  });
});

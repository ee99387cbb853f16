// loadShed's fleet limit (`store`): shedders sharing a store (as processes sharing Redis do)
// share one in-flight count and one reserve; a refusal in one pool holds nothing in another;
// leases of a holder that never releases (a crashed process) come back after leaseMs.
import { Redis } from "ioredis";
import { MemoryStore, type Store } from "sluice";
import { loadShed } from "sluice/http";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deferred } from "../http/conformance.ts";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("loadShed fleet on Redis");
const client = new Redis(redis?.url ?? "redis://127.0.0.1:1", { lazyConnect: true, enableOfflineQueue: false });
beforeAll(async () => {
  if (redis !== undefined) await client.connect();
});
afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 100));
  client.disconnect();
});

const request = (priority: number) => new Request("http://x/", { headers: { "x-priority": String(priority) } });
const priority = (r: unknown) => Number((r as Request).headers.get("x-priority"));
const ok = () => new Response("ok");

const stores: Record<string, () => Store> = {
  MemoryStore: () => new MemoryStore(),
  ...(redis === undefined ? {} : { RedisStore: () => new RedisStore({ client, prefix: uniquePrefix("shed-fleet") }) }),
};

describe.each(Object.keys(stores))("loadShed fleet limit on %s", (kind) => {
  it("two shedders share one in-flight count and one reserve", async () => {
    const store = (stores[kind] as () => Store)();
    const options = { limit: 4, reserve: { 0: 0.5 }, store, priority, name: "api" };
    const a = loadShed(options);
    const b = loadShed(options);
    const gate = deferred();
    const afterEvent = (event: { promise: Promise<void> }) => async () => {
      await event.promise;
      return ok();
    };
    const slow = afterEvent(gate);
    // Priority 5 may use 2 of the 4 fleet slots: one on each process.
    const held = [a(request(5), slow), b(request(5), slow)];
    for (const more = within(); a.stats().inFlight + b.stats().inFlight < 2 && more(); )
      await new Promise((r) => setTimeout(r, 5));
    expect((await b(request(5), ok)).status).toBe(503);
    expect((await a(request(9), ok)).status).toBe(503);
    // Priority 0 has the other 2, on either process, and not a third.
    held.push(a(request(0), slow), b(request(0), slow));
    for (const more = within(); a.stats().inFlight + b.stats().inFlight < 4 && more(); )
      await new Promise((r) => setTimeout(r, 5));
    expect((await b(request(0), ok)).status).toBe(503);
    expect([a.stats().shedByPriority[9], b.stats().shedByPriority[5], b.stats().shedByPriority[0]]).toEqual([1, 1, 1]);
    gate.resolve();
    for (const answer of await Promise.all(held)) expect(answer.status).toBe(200);
    // All given back: priority 5 gets its 2 slots again (a refused request held no lease).
    const again = deferred();
    const two = [a(request(5), afterEvent(again)), b(request(5), afterEvent(again))];
    for (const more = within(); a.stats().inFlight + b.stats().inFlight < 2 && more(); )
      await new Promise((r) => setTimeout(r, 5));
    expect(a.stats().inFlight + b.stats().inFlight).toBe(2);
    again.resolve();
    await Promise.all(two);
  });

  it("gives a crashed holder's slots back after leaseMs", async () => {
    const store = (stores[kind] as () => Store)();
    const crashed = loadShed({ limit: 1, store, leaseMs: 200, name: "crash" });
    const survivor = loadShed({ limit: 1, store, leaseMs: 200, name: "crash" });
    // Admitted, and never answered: the process holding it is gone.
    void crashed(request(5), () => new Promise<Response>(() => {}));
    for (const more = within(); crashed.stats().inFlight < 1 && more(); ) await new Promise((r) => setTimeout(r, 5));
    expect((await survivor(request(5), ok)).status).toBe(503);
    let status = 503;
    for (const more = within(); status === 503 && more(); await new Promise((r) => setTimeout(r, 50))) {
      status = (await survivor(request(5), ok)).status;
    }
    expect(status).toBe(200);
  });
});

describe("loadShed fleet options", () => {
  it("needs a numeric limit, and leaseMs only with a store", () => {
    expect(() => loadShed({ limit: "adaptive", store: new MemoryStore() })).toThrow(
      /`store` must be used with a numeric `limit`/,
    );
    expect(() => loadShed({ limit: 3, leaseMs: 100 })).toThrow(/`leaseMs` must be set only with `store`/);
    expect(() => loadShed({ limit: 3, store: {} as Store })).toThrow(/`store` must be a sluice Store/);
  });
});

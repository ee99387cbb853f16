// The fleet queue's script on real Redis, driven directly (no throttle): two owners' tickets are
// granted in priority then arrival order across owners; a release hands the slot to the head
// and PUBLISHes the grant to its owner; a rate-blocked head's owner is told when to call again;
// a dead owner's tickets leave the queue; cancel gives a grant back; a forgotten owner is told.
import { afterAll, describe, expect, it } from "vitest";
import type { FleetGrant, FleetListener, FleetQueue } from "../../src/core/fleet-queue.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue");

interface Heard {
  grants: Array<{ key: string; id: string }>;
  wakes: Array<{ key: string; ms: number }>;
  relinks: number;
}

function listener(): FleetListener & Heard {
  const heard: Heard = { grants: [], wakes: [], relinks: 0 };
  return Object.assign(heard, {
    granted: (key: string, gs: readonly FleetGrant[]) => {
      for (const g of gs) heard.grants.push({ key, id: g.id });
    },
    wake: (key: string, ms: number) => heard.wakes.push({ key, ms }),
    relinked: () => heard.relinks++,
  });
}

const stores: RedisStore[] = [];
const queues: FleetQueue[] = [];
afterAll(async () => {
  for (const q of queues) await q.close();
  for (const s of stores) await s.close();
});

async function owners(
  n: number,
  config: { rate?: object[]; concurrency?: number; ownerTtlMs?: number; leaseMs?: number },
): Promise<Array<{ q: FleetQueue; heard: Heard }>> {
  const prefix = uniquePrefix("fleet-queue");
  const out: Array<{ q: FleetQueue; heard: Heard }> = [];
  for (let i = 0; i < n; i++) {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix });
    stores.push(store);
    const heard = listener();
    const q = await store.openFleetQueue({
      rate: config.rate === undefined ? undefined : { id: "name:throttle:t", specs: config.rate as never },
      concurrency:
        config.concurrency === undefined
          ? undefined
          : {
              id: "name:throttle:t:concurrency",
              spec: { algorithm: "concurrency", limit: config.concurrency, leaseMs: config.leaseMs ?? 10_000 } as never,
            },
      ownerTtlMs: config.ownerTtlMs ?? 10_000,
      listener: heard,
    });
    queues.push(q);
    out.push({ q, heard });
  }
  return out;
}

const until = async (f: () => boolean) => {
  for (let i = 0; i < 400 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(f()).toBe(true);
};

describe.skipIf(redis === undefined)("Redis fleet queue", () => {
  it("grants in priority then arrival order across owners, one slot at a time, handed off on release", async () => {
    const [a, b] = await owners(2, { concurrency: 1 });
    if (a === undefined || b === undefined) throw new Error("owners");
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]); // granted at once
    expect(a.heard.grants).toEqual([{ key: "k", id: "a1" }]);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    await a.q.enqueue("k", [
      { id: "a2", priority: 5, cost: 1 },
      { id: "a3", priority: 1, cost: 1 },
    ]);
    await b.q.enqueue("k", [{ id: "b2", priority: 1, cost: 1 }]);
    expect(b.heard.grants).toEqual([]);
    // Order now: a3 (1), b2 (1), b1 (5), a2 (5).
    await a.q.release("k", "a1", false);
    expect(a.heard.grants.map((g) => g.id)).toEqual(["a1", "a3"]);
    await a.q.release("k", "a3", false);
    await until(() => b.heard.grants.length === 1);
    expect(b.heard.grants[0]?.id).toBe("b2");
    await b.q.release("k", "b2", false);
    expect(b.heard.grants.map((g) => g.id)).toEqual(["b2", "b1"]);
    await b.q.release("k", "b1", false);
    await until(() => a.heard.grants.length === 3);
    expect(a.heard.grants.map((g) => g.id)).toEqual(["a1", "a3", "a2"]);
  });

  it("a ticket that keeps its place (sent again after a 429) goes ahead of its priority, not of a higher one", async () => {
    const [a] = await owners(1, { concurrency: 1 });
    if (a === undefined) throw new Error("owners");
    await a.q.enqueue("k", [{ id: "run", priority: 5, cost: 1 }]);
    await a.q.enqueue("k", [
      { id: "p5", priority: 5, cost: 1 },
      { id: "p4", priority: 4, cost: 1 },
    ]);
    await a.q.enqueue("k", [{ id: "again", priority: 5, cost: 1, front: true }]);
    for (const id of ["run", "p4", "again"]) await a.q.release("k", id, false);
    expect(a.heard.grants.map((g) => g.id)).toEqual(["run", "p4", "again", "p5"]);
  });

  it("a rate-blocked head: only its owner is told when to call again, and that call grants what fits", async () => {
    const [a, b] = await owners(2, { rate: [{ algorithm: "fixed-window", limit: 2, windowMs: 500 }] });
    if (a === undefined || b === undefined) throw new Error("owners");
    await a.q.enqueue("k", [
      { id: "a1", priority: 5, cost: 1 },
      { id: "a2", priority: 5, cost: 1 },
    ]);
    await b.q.enqueue("k", [
      { id: "b1", priority: 5, cost: 1 },
      { id: "b2", priority: 5, cost: 1 },
    ]);
    const granted = a.heard.grants.length + b.heard.grants.length;
    // The window may have turned between the calls; at most 2 per window.
    expect(granted).toBeGreaterThanOrEqual(2);
    if (granted === 2) {
      expect(b.heard.wakes.length).toBe(1);
      expect(a.heard.wakes.length).toBe(0);
      await new Promise((r) => setTimeout(r, b.heard.wakes[0]?.ms ?? 0));
      await b.q.pump("k");
      await until(() => b.heard.grants.length === 2);
    }
  });

  it("a renewed lease keeps its slot past leaseMs; one no longer renewed frees it for the head", async () => {
    const [a, b] = await owners(2, { concurrency: 1, leaseMs: 1000 });
    if (a === undefined || b === undefined) throw new Error("owners");
    await a.q.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    // Renewed every 200 ms (a timer late by up to 800 ms on a loaded machine still renews in time).
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 200));
      expect(await a.q.renew("k", "a1")).toBe(true);
    }
    // At least 1600 ms held by renewals: b1 still waits (its owner's heartbeat grants nothing).
    await b.q.heartbeat("k");
    expect(b.heard.grants).toEqual([]);
    await new Promise((r) => setTimeout(r, 1200));
    expect(await a.q.renew("k", "a1")).toBe(false); // expired: no longer held
    await b.q.heartbeat("k");
    await until(() => b.heard.grants.length === 1);
  });

  it("a dead owner's tickets leave the queue; cancel gives a grant back; a forgotten owner hears so", async () => {
    const [a, b] = await owners(2, { concurrency: 1, ownerTtlMs: 200 });
    if (a === undefined || b === undefined) throw new Error("owners");
    await b.q.enqueue("k", [{ id: "b0", priority: 0, cost: 1 }]);
    expect(await b.q.cancel("k", "b0")).toBe("returned");
    await a.q.enqueue("k", [{ id: "a1", priority: 0, cost: 1 }]);
    expect(a.heard.grants.map((g) => g.id)).toEqual(["a1"]);
    await a.q.enqueue("k", [{ id: "a2", priority: 0, cost: 1 }]);
    await b.q.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    expect(await b.q.cancel("k", "nope")).toBe("unknown");
    await new Promise((r) => setTimeout(r, 300)); // a stops heartbeating: it is dead
    expect(await b.q.heartbeat("k")).toBe(false); // b too was forgotten: it must resend
    await a.q.release("k", "a1", false); // the slot frees; a2's owner counts as dead
    // (a's release marked nothing alive: a2 leaves the head, b1 is granted.)
    await until(() => b.heard.grants.length === 2);
    expect(b.heard.grants.map((g) => g.id)).toEqual(["b0", "b1"]);
  });
});

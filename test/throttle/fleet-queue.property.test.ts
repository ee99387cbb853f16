// The Redis fleet queue's ordering and accounting against a model (seeded: fast-check runs from
// SLUICE_SEED and prints the seed and path of a failure). Two owners (two stores, two
// connections) send random tickets, cancel waiting or granted ones and release running ones, on
// a key limited to `concurrency` jobs at once; after each step, the grants each owner has heard
// (in its reply, or PUBLISHed by another owner's call) must be exactly the model's: the head in
// priority then arrival order whenever a slot is free, never more than `concurrency` held.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { FleetGrant, FleetQueue } from "../../src/core/fleet-queue.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { runs } from "../support/seed.ts";

const redis = await standaloneRedis("throttle fleet queue property");

type Step =
  | { op: "enqueue"; owner: 0 | 1; priority: number; count: number }
  | { op: "cancel"; pick: number }
  | { op: "release"; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant("enqueue" as const),
    owner: fc.constantFrom(0 as const, 1 as const),
    priority: fc.integer({ min: 0, max: 9 }),
    count: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ op: fc.constant("cancel" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("release" as const), pick: fc.nat() }),
);

const stores: RedisStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

describe.skipIf(redis === undefined)("Redis fleet queue: ordering and accounting (seeded property)", () => {
  it("grants exactly what the model grants, in its order", { timeout: 120_000 }, async () => {
    const url = redis?.url ?? "";
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 3 }),
        async (steps, limit) => {
          const prefix = uniquePrefix("fleet-queue-property");
          const heard: string[][] = [[], []];
          const queues: FleetQueue[] = [];
          for (const owner of [0, 1] as const) {
            const store = await RedisStore.connect({ url, prefix });
            stores.push(store);
            queues.push(
              await store.openFleetQueue({
                rate: undefined,
                concurrency: {
                  id: "name:throttle:p:concurrency",
                  spec: { algorithm: "concurrency", limit, leaseMs: 60_000 } as never,
                },
                ownerTtlMs: 60_000,
                listener: {
                  granted: (_k: string, gs: readonly FleetGrant[]) => {
                    for (const g of gs) heard[owner]?.push(g.id);
                  },
                  wake: () => {},
                  relinked: () => {},
                },
              }),
            );
          }
          // The model.
          const waiting: Array<{ id: string; owner: 0 | 1; priority: number; seq: number }> = [];
          const held = new Map<string, 0 | 1>();
          const expected: string[][] = [[], []];
          let seq = 0;
          let n = 0;
          const pump = () => {
            while (held.size < limit && waiting.length > 0) {
              waiting.sort((a, b) => a.priority - b.priority || a.seq - b.seq);
              const head = waiting.shift() as (typeof waiting)[number];
              held.set(head.id, head.owner);
              expected[head.owner]?.push(head.id);
            }
          };
          const q = (owner: 0 | 1) => queues[owner] as FleetQueue;
          for (const s of steps) {
            if (s.op === "enqueue") {
              const tickets = Array.from({ length: s.count }, () => ({ id: `t${n++}`, priority: s.priority, cost: 1 }));
              for (const t of tickets) waiting.push({ id: t.id, owner: s.owner, priority: t.priority, seq: seq++ });
              pump();
              await q(s.owner).enqueue("k", tickets);
            } else {
              const pool = s.op === "cancel" ? [...waiting.map((w) => [w.id, w.owner] as const), ...held] : [...held];
              if (pool.length === 0) continue;
              const [id, owner] = pool[s.pick % pool.length] as readonly [string, 0 | 1];
              const w = waiting.findIndex((x) => x.id === id);
              if (w >= 0) waiting.splice(w, 1);
              held.delete(id);
              pump();
              if (s.op === "cancel") await q(owner).cancel("k", id);
              else await q(owner).release("k", id, false);
            }
            // Grants to the other owner arrive by PUBLISH: wait for them.
            for (let i = 0; i < 200 && heard.some((h, o) => h.length < (expected[o] as string[]).length); i++) {
              await new Promise((r) => setTimeout(r, 5));
            }
            expect(heard).toEqual(expected);
          }
          for (const queue of queues) await queue.close();
          for (const store of stores.splice(0)) await store.close();
        },
      ),
      { numRuns: runs(40) },
    );
  });
});

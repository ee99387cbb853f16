// Leases while the shared store is down (SPEC §16 with docs/redis.md's onError): a RedisStore
// whose server cannot be reached answers through its `onError` fallback. With a fallback
// limiter or store holding leases locally, an admitted request takes a local lease; the promise
// "no path leaks a slot" asks that its release() frees that local slot.
//
// Was broken (fixed on the lease branch): limit 2, four requests in turn, each released at once,
// got [admitted, admitted, refused, refused]: the fallback's decisions carried `failure` but no
// release(), so each admitted request leaked a local slot for leaseMs (60 s) and after `limit`
// requests the fallback refused everything. Now a fallback limiter's own handles are kept, and a
// fallback store's lease gets handles that act in that store (src/stores/remote/failure-policy.ts).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter, type Decision, ManualClock, MemoryStore, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { deadIoredis } from "../support/redis-server.ts";

const T = 1_765_000_000_000;
const spec = { algorithm: "concurrency", limit: 2, leaseMs: 60_000 } as const;

describe("leases answered by onError while Redis is down", () => {
  it.each([
    ["a fallback limiter", (clock: ManualClock) => createLimiter(spec, { clock })],
    ["a fallback store", () => ({ fallback: new MemoryStore() })],
  ] as const)("%s: a released request frees its local slot", async (_name, onError) => {
    const clock = new ManualClock(T);
    const client = deadIoredis();
    try {
      const store = new RedisStore({ client, prefix: "lease-fallback:", onError: onError(clock) as never });
      const limiter = createLimiter(spec, { clock, store, name: "fb" });
      const seen: Array<[boolean, boolean, boolean]> = [];
      for (let i = 0; i < 4; i++) {
        const d = await limiter.tryAcquire("k");
        seen.push([d.allowed, d.failure !== undefined, typeof d.release === "function"]);
        await d.release?.();
        clock.advance(1);
      }
      console.log(`${_name}: [allowed, failure set, has release()] ${JSON.stringify(seen)}`);
      // Every request was answered by the fallback (failure set) and, released, left room for the next.
      expect(seen.map(([allowed]) => allowed)).toEqual([true, true, true, true]);
    } finally {
      client.disconnect();
    }
  });
});

const dir = mkdtempSync(join(tmpdir(), "sluice-lease-fallback-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store that cannot reach its server, falling back to a MemoryStore: Redis, and a ClusterStore on a path that is no socket. */
const downStores: Array<[string, () => { store: Store; close(): void }]> = [
  [
    "RedisStore",
    () => {
      const client = deadIoredis();
      const store = new RedisStore({ client, prefix: "lease-fallback2:", onError: { fallback: new MemoryStore() } });
      return { store, close: () => client.disconnect() };
    },
  ],
  [
    "ClusterStore",
    () => {
      // A regular file where the socket should be: the store never becomes or reaches a host.
      const socket = join(dir, `not-a-socket-${Math.random().toString(36).slice(2)}`);
      writeFileSync(socket, "");
      const store = new ClusterStore({ socket, timeoutMs: 2000, onError: { fallback: new MemoryStore() } });
      return { store, close: () => undefined };
    },
  ],
];

describe("a fallback store's leases: held, renewed, released there", () => {
  it.each(downStores)("%s down: the fallback caps in flight, renews, and frees on release", async (_name, make) => {
    const clock = new ManualClock(T);
    const { store, close } = make();
    try {
      const limiter = createLimiter(spec, { clock, store, name: "fb2" });
      const a = await limiter.tryAcquire("k");
      const b = await limiter.tryAcquire("k");
      expect([a.allowed, b.allowed, a.failure?.policy]).toEqual([true, true, "fallback"]);
      // Both slots are held in the fallback: a third is refused there.
      expect((await limiter.tryAcquire("k")).allowed).toBe(false);
      clock.advance(5);
      const renewed = (await (a.renew as () => Promise<Decision>)()) as Decision;
      expect([renewed.allowed, renewed.at]).toEqual([true, T + 5]);
      const released = (await (a.release as () => Promise<Decision>)()) as Decision;
      // What a peek then says: one slot free (taking it would leave 0).
      expect([released.allowed, released.remaining]).toEqual([true, 0]);
      await (a.release as () => Promise<Decision>)(); // idempotent: b keeps its slot
      const c = await limiter.tryAcquire("k");
      expect(c.allowed).toBe(true);
      expect((await limiter.tryAcquire("k")).allowed).toBe(false);
      // A renewal after the release is denied for good.
      expect(((await (a.renew as () => Promise<Decision>)()) as Decision).retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    } finally {
      close();
    }
  });
});

describe("a release by receipt while the store is down frees only what that receipt names in the fallback", () => {
  // A lease the server granted (receipt T - 5000), released during the outage: the fallback
  // logged nothing at that instant, so it frees nothing. Before the fix the receipt was dropped
  // on the way to the fallback, which then freed its newest lease: another holder's slot, and a
  // limit-1 key had two holders.
  it.each(downStores)("%s down: a stale receipt does not free the fallback's holder", async (_name, make) => {
    const clock = new ManualClock(T);
    const { store, close } = make();
    try {
      const limiter = createLimiter({ ...spec, limit: 1 }, { clock, store, name: "fb3" });
      const holder = await limiter.tryAcquire("k");
      expect([holder.allowed, holder.failure?.policy]).toEqual([true, "fallback"]);
      clock.advance(1);
      await limiter.release("k", { at: T - 5000 });
      const intruder = await limiter.tryAcquire("k");
      expect(intruder.allowed).toBe(false);
      // The holder's own receipt still frees its slot.
      await limiter.release("k", { at: holder.at as number });
      expect((await limiter.tryAcquire("k")).allowed).toBe(true);
    } finally {
      close();
    }
  });
});

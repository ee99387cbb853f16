// The hosted fleet queue (fleet-queue-host.ts: ClusterStore's socket host, SharedMemoryStore's
// hosting thread) has what the Redis queue gained for issue 32 (queue.lua):
// - a closing owner strands no head: the host grants a head due later with its own timer, so
//   nothing waits on the closing owner's wake-up (no hand-off needed: proved here, and on Redis,
//   where the closing owner hands its wake-up on);
// - a fleet pause (a 429) is the host's: nothing of the key is granted until it ends, every
//   other owner hears it at once (`pause` event, reason "fleet"), and no job of theirs starts on
//   a grant decided before its end (before: a `block` of the rate record, heard by no one);
// - the adaptive penalty of a burst-1 rate rides on the ticket (unit table in
//   src/stores/fleet-queue-host.test.ts).
// Two owners per store kind: two throttles of one name, as two processes would have.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, type Store, systemClock } from "../../src/index.ts";
import { ClusterStore } from "../../src/stores/cluster/cluster-store.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { SharedMemoryStore } from "../../src/stores/threads/shared-memory-store.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("throttle fleet queue, close hand-off");

const dir = mkdtempSync(join(tmpdir(), "sluice-hosted-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const kinds: Record<string, () => { stores: [Store, Store]; close: () => Promise<void> }> = {
  SharedMemoryStore: () => {
    const store = new SharedMemoryStore({ maxKeys: 1000, recordWords: 16 });
    return { stores: [store, store], close: async () => store.close?.() };
  },
  "ClusterStore (socket)": () => {
    const socket = join(dir, `s${n++}.sock`);
    const a = new ClusterStore({ socket, timeoutMs: 10_000 });
    const b = new ClusterStore({ socket, timeoutMs: 10_000 });
    // (A ClusterStore has no close: its socket and connections do not keep the process alive.)
    return { stores: [a, b], close: async () => {} };
  },
};

/**
 * Two owners, one key at a rate of 5/s with concurrency 1: A's second job waits behind its
 * first (A is told to wake the key on Redis); B's job arrives behind it. A's last release leaves
 * B's head due 200 ms later (the rate's spacing); A closes: B's job must still start then.
 */
async function closingOwnerStrandsNoHead(stores: readonly [Store, Store]): Promise<void> {
  const options = {
    name: `handoff${n++}`,
    clock: systemClock,
    rate: { algorithm: "gcra", limit: 5, periodMs: 1000, burst: 1 },
    concurrency: 1,
  } as const;
  const a = createThrottle({ ...options, store: stores[0] });
  const b = createThrottle({ ...options, store: stores[1] });
  const ran: string[] = [];
  const a1 = a.schedule(async () => ran.push("a1"));
  const a2 = a.schedule(async () => ran.push("a2"));
  await new Promise((r) => setTimeout(r, 50));
  const b1 = b.schedule(async () => ran.push("b1"));
  await Promise.all([a1, a2]);
  await a.close();
  const stalled = new Promise((r) => setTimeout(() => r("stalled"), 10_000).unref());
  expect(await Promise.race([b1.then(() => "ran"), stalled])).toBe("ran");
  expect(ran).toEqual(["a1", "a2", "b1"]);
  await b.close();
}

// On Redis the closing owner may be the one the store counts on to wake the key's head (found
// by bench/throttle-upstream.mjs: in a concurrency-1 fleet the process finishing its last job
// was still the waker of the next head; it closed, its timer with it, and the head waited for
// the survivors' rescue pump, 3 owner lifetimes: 30 s, so the fleet ran at 11% of the
// upstream's limit): it hands its wake-up to a process with work.
describe.skipIf(redis === undefined)("the fleet queue on RedisStore", () => {
  it("a closing owner hands its wake-up on: the next head starts at its due instant, not at a rescue pump 30 s later", {
    timeout: 20_000,
  }, async () => {
    const prefix = uniquePrefix("fleet-handoff");
    const stores = await Promise.all([0, 1].map(() => RedisStore.connect({ url: redis?.url ?? "", prefix })));
    await closingOwnerStrandsNoHead(stores as [RedisStore, RedisStore]);
    await Promise.all(stores.map((s) => s.close()));
  });
});

describe.each(Object.keys(kinds))("the hosted fleet queue on %s", (kind) => {
  it("a closing owner strands no head: the next head starts at its due instant", { timeout: 20_000 }, async () => {
    const { stores, close } = (kinds[kind] as () => ReturnType<(typeof kinds)[string]>)();
    await closingOwnerStrandsNoHead(stores);
    await close();
  });

  it("a fleet pause: the other owner hears it at once, and none of its jobs starts on a grant from before its end", {
    timeout: 20_000,
  }, async () => {
    const { stores, close } = (kinds[kind] as () => ReturnType<(typeof kinds)[string]>)();
    const options = { name: `pause${n++}`, clock: systemClock, concurrency: 2, leaseMs: 10_000 } as const;
    const a = createThrottle({ ...options, store: stores[0] });
    const b = createThrottle({ ...options, store: stores[1] });
    const heard: string[] = [];
    const starts: number[] = [];
    b.on("pause", (e) => heard.push(e.reason));
    b.on("start", (e) => starts.push(e.at));
    // Both owners' links open (a first job each), then a pauses the key for the fleet.
    await Promise.all([a.schedule(async () => 1), b.schedule(async () => 1)]);
    starts.length = 0;
    const pausedAt = Date.now();
    await a.pause("default", 400);
    while (heard.length === 0 && Date.now() - pausedAt < 5_000) await new Promise((r) => setTimeout(r, 5));
    expect(heard).toEqual(["fleet"]);
    await Promise.all([1, 2, 3].map(() => b.schedule(async () => 1)));
    // Every start is on a grant the host decided at or after the pause's end (its clock).
    expect(starts).toHaveLength(3);
    for (const at of starts) expect(at).toBeGreaterThanOrEqual(pausedAt + 400 - 5);
    await Promise.all([a.close(), b.close()]);
    await close();
  });
});

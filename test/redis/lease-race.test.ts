// Handles called without awaiting on async stores (SPEC §16: release() idempotent, never another
// holder's lease): on RedisStore and ClusterStore, two leases of one ms; the first one's renew(),
// release(), release(), renew() fired at once, then the second one's release() late. Seeded
// orders; each run counts what it checked.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter, type Decision, ManualClock, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";
import { SEED } from "../support/seed.ts";

const T = 1_765_000_000_000;
const redis = await standaloneRedis("lease race");
const dir = mkdtempSync(join(tmpdir(), "sluice-lease-race-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const free = (d: Decision): number => (d.allowed ? d.remaining + 1 : 0);

/** 30 seeded rounds on `store`: returns how many rounds were checked. */
async function rounds(store: Store, label: string): Promise<number> {
  const rnd = mulberry32(SEED);
  console.log(`${label}: seed ${SEED}`);
  let checked = 0;
  for (let round = 0; round < 30; round++) {
    const clock = new ManualClock(T + round * 1_000_000);
    const limiter = createLimiter(
      { algorithm: "concurrency", limit: 3, leaseMs: 10_000 },
      { clock, store, name: `race-${round}` },
    );
    const a = await limiter.tryAcquire("k");
    const b = await limiter.tryAcquire("k");
    expect([a.allowed, b.allowed, a.at === b.at]).toEqual([true, true, true]);
    clock.advance(1 + Math.floor(rnd() * 100));
    const calls = [
      () => (a.renew as () => Promise<Decision>)(),
      () => (a.release as () => Promise<Decision>)(),
      () => (a.release as () => Promise<Decision>)(),
      () => (a.renew as () => Promise<Decision>)(),
    ];
    // A seeded order, all in flight at once.
    for (let i = calls.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [calls[i], calls[j]] = [calls[j] as (typeof calls)[number], calls[i] as (typeof calls)[number]];
    }
    await Promise.all(calls.map((c) => c()));
    // a is gone whatever the order; b still holds its slot.
    expect(free(await limiter.peek("k")), `${label} round ${round}`).toBe(2);
    expect((await (b.renew as () => Promise<Decision>)()).allowed, `${label} round ${round}: b renews`).toBe(true);
    expect((await (a.renew as () => Promise<Decision>)()).allowed).toBe(false);
    // b released late, twice at once: exactly its slot.
    await Promise.all([(b.release as () => Promise<Decision>)(), (b.release as () => Promise<Decision>)()]);
    expect(free(await limiter.peek("k"))).toBe(3);
    checked++;
  }
  return checked;
}

describe("lease handles fired at once on async stores", () => {
  const clients = useStandaloneClients(redis);
  it.skipIf(redis === undefined)("RedisStore", async () => {
    const store = new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("lease-race"),
      expiryGraceMs: 600_000,
      timeoutMs: WORK_BOUND_MS,
    });
    expect(await rounds(store, "redis")).toBe(30);
  });

  it("ClusterStore (socket)", async () => {
    const socket = join(dir, "r.sock");
    new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    const client = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    expect(await rounds(client, "cluster")).toBe(30);
  });
});

// The clock-skew receipt violation (test/properties/lease-known.test.ts, first case; fixed on the
// lease branch in 9087314, these failed before it) on the
// shared stores a fleet uses: two processes whose readings are 5 ms apart (injected clocks here;
// in a fleet, two workers' system clocks, or one worker's reading delayed in a batch behind
// another's). The lease taken behind is logged at the newest instant but receipted at its own
// reading: its release() freed another lease's entry (or nothing), and that holder's renew() was
// denied while it held its lease.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter, type Decision, ManualClock, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";

const T = 1_765_000_000_000;
const redis = await standaloneRedis("lease skew");
const dir = mkdtempSync(join(tmpdir(), "sluice-lease-skew-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** B1 (behind), A (ahead), B2 (behind); B2.release(); then whether B1 still renews. */
async function skewed(store: Store): Promise<boolean> {
  const spec = { algorithm: "concurrency", limit: 3, leaseMs: 60_000 } as const;
  const a = createLimiter(spec, { clock: new ManualClock(T + 5), store, name: "skew" });
  const b = createLimiter(spec, { clock: new ManualClock(T), store, name: "skew" });
  const b1 = await b.tryAcquire("k");
  await a.tryAcquire("k");
  const b2 = await b.tryAcquire("k");
  expect([b1.allowed, b2.allowed]).toEqual([true, true]);
  await (b2.release as () => Promise<Decision>)();
  return (await (b1.renew as () => Promise<Decision>)()).allowed;
}

describe("two clocks 5 ms apart on one shared store", () => {
  const clients = useStandaloneClients(redis);
  it.skipIf(redis === undefined)("RedisStore: B1 still renews after B2's release", async () => {
    const store = new RedisStore({
      client: clients.io,
      prefix: uniquePrefix("lease-skew"),
      expiryGraceMs: 600_000,
      timeoutMs: WORK_BOUND_MS,
    });
    expect(await skewed(store)).toBe(true);
  });

  it("ClusterStore: B1 still renews after B2's release", async () => {
    const socket = join(dir, "k.sock");
    new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
    expect(await skewed(new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS }))).toBe(true);
  });
});

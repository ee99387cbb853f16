// Leases across real worker threads on one SharedMemoryStore (SPEC §16: never more than `limit`
// in flight per key; no path leaks a slot): 4 threads, 2 keys, limit 3, each thread acquiring
// and releasing in a seeded order while counting its work in flight in shared memory. The
// count never passes the limit; at rest every slot is free. The seeds are printed.
import { Worker } from "node:worker_threads";
import type { Decision } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { SEED } from "../support/seed.ts";
import { ensureBuilt } from "./support.ts";

const T = 1_765_000_000_000;
const LIMIT = 3;
const spec = { algorithm: "concurrency", limit: LIMIT, leaseMs: 3_600_000 } as const;

beforeAll(() => ensureBuilt(), 300_000);

async function run(ticking: boolean | "system"): Promise<{ admitted: number; max: number; free: number[] }> {
  const store = new SharedMemoryStore({ maxKeys: 64, seed: 1 });
  const counters = new SharedArrayBuffer(8);
  const clockCell = new SharedArrayBuffer(8);
  new Float64Array(clockCell)[0] = T;
  const results = await Promise.all(
    Array.from({ length: 4 }, (_, t) => {
      const seed = (SEED + t) >>> 0;
      const worker = new Worker(new URL("./lease-worker.mjs", import.meta.url), {
        workerData: { handle: store.handle, spec, seed, iterations: 3000, counters, clockCell, ticking },
      });
      return new Promise<{ admitted: number; max: number }>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    }),
  );
  const { createLimiter, ManualClock } = await import("sluice");
  const clock = new ManualClock(ticking === "system" ? Date.now() : T + (ticking ? 3000 : 0));
  const limiter = createLimiter(spec, { store, clock, name: "lease-threads" });
  const free = [0, 1].map((k) => {
    const d = limiter.peek(`k${k}`) as Decision;
    return d.allowed ? d.remaining + 1 : 0;
  });
  store.close();
  return {
    admitted: results.reduce((a, r) => a + r.admitted, 0),
    max: Math.max(...results.map((r) => r.max)),
    free,
  };
}

describe("leases across 4 worker threads", () => {
  it("one instant: never past the limit, every slot free at rest", async () => {
    console.log(`lease threads: seeds ${SEED}..${SEED + 3}`);
    const r = await run(false);
    console.log(`one instant: ${JSON.stringify(r)}`);
    expect(r.admitted).toBeGreaterThan(1000);
    expect(r.max).toBeLessThanOrEqual(LIMIT);
    expect(r.free).toEqual([LIMIT, LIMIT]);
  }, 120_000);

  // Each thread's clock ticks once per own iteration, so threads decide at instants apart (far
  // more than real workers' clocks, but one ms is enough). Before 9087314 on the lease branch
  // the clock-skew receipt violation (test/properties/lease-known.test.ts, first case) leaked
  // slots: a lease decided behind a key's newest entry was logged there but receipted at its own
  // instant, so its release freed nothing. Seen then: {"admitted":2480,"max":3,"free":[0,0]}
  // against 8422 on one instant; after: {"admitted":9116,"max":3,"free":[3,3]}.
  it("each thread's own ticking clock: never past the limit, every slot free at rest", async () => {
    const r = await run(true);
    console.log(`ticking clocks: ${JSON.stringify(r)}`);
    expect(r.admitted).toBeGreaterThan(1000);
    expect(r.max).toBeLessThanOrEqual(LIMIT);
    expect(r.free).toEqual([LIMIT, LIMIT]);
  }, 120_000);
});

// The clock-skew receipt violation without any injected clock: each thread reads Date.now(), and
// a thread that read the clock then decided after another thread's newer lease logged its own
// lease at that newer instant while its receipt was its reading, so its release freed nothing.
// Seen in four runs before 9087314 (lease branch): free at rest [1,1] or [2,1] (slots held for
// leaseMs, here an hour; by default a minute) after 3-6.5k admissions; after it, [3,3].
describe("leases across 4 worker threads on the system clock (a deployment)", () => {
  it("never past the limit; at rest every slot free", async () => {
    const r = await run("system");
    console.log(`system clock: ${JSON.stringify(r)}`);
    expect(r.admitted).toBeGreaterThan(1000);
    expect(r.max).toBeLessThanOrEqual(LIMIT);
    expect(r.free).toEqual([LIMIT, LIMIT]);
  }, 120_000);
});

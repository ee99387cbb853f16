// loadShed on a really overloaded server (test/support/shed-server.mjs: 4 slots held 15 ms plus
// 1 ms of CPU each, about 250 requests a second), driven at ~2.4× that with autocannon over
// loopback. Only properties that do not depend on timing are asserted: critical requests (20%
// of the offered load, on fewer connections than the reserve holds slots) all pass while the
// rest floods and is shed with 503; and requests in flight return to 0 at rest, also after
// clients that time out and drop their connections mid-request; and the adaptive limit, started
// far above the pool, stays within its bounds and comes down under a sustained overload (a
// queue 16× the unloaded latency against a tolerance of 1.3×: no noise on a shared machine
// hides that). Figures: bench/shed.mjs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";
import { drive, type ShedServer, startShedServer } from "../support/shed-load.mjs";

type Stats = Awaited<ReturnType<ShedServer["stats"]>>;
let server: ShedServer;

beforeAll(async () => {
  ensureBuilt();
  // 24 in flight at most, half of it held for priority 0: the 12 critical connections always find a slot.
  server = await startShedServer({
    mode: "fixed",
    slots: 4,
    holdMs: 15,
    burnMs: 1,
    shed: { limit: 24, reserve: { 0: 0.5 } },
  });
});
afterAll(() => server?.stop());

async function atRest(on: ShedServer = server): Promise<Stats> {
  let stats = await on.stats();
  for (const more = within(); stats.shed?.inFlight !== 0 && more(); ) {
    await new Promise((r) => setTimeout(r, 20));
    stats = await on.stats();
  }
  return stats;
}

describe("loadShed on an overloaded server", () => {
  it("keeps every critical request while the flood is shed with 503; in flight returns to 0", async () => {
    const url = `${server.url}/work`;
    const [critical, flood] = await Promise.all([
      drive(url, { connections: 12, overallRate: 120, duration: 3, headers: { "x-priority": "0" } }),
      drive(url, { connections: 100, overallRate: 480, duration: 3 }),
    ]);
    expect(critical.statuses).toEqual({ 200: critical.ok.length });
    expect(critical.ok.length).toBeGreaterThan(0);
    expect(critical.result.errors).toBe(0);
    expect(flood.statuses[503]).toBeGreaterThan(0);
    expect(flood.statuses[200]).toBeGreaterThan(0);
    const stats = await atRest();
    expect(stats.shed?.inFlight).toBe(0);
    expect(stats.shed?.shedByPriority[0]).toBe(0);
    // autocannon stops counting at the end of its duration: the server saw at least as many.
    expect(stats.shed?.shedByPriority[5]).toBeGreaterThanOrEqual(flood.statuses[503] as number);
    expect(stats.served[0]).toBeGreaterThanOrEqual(critical.ok.length);
  });

  it("returns to 0 in flight after clients that time out and drop their connections", async () => {
    // A slow pool (1.5 s a request): every request outlives autocannon's 1 s timeout.
    const slow = await startShedServer({ mode: "fixed", slots: 4, holdMs: 1500, burnMs: 0, shed: { limit: 24 } });
    try {
      const run = await drive(`${slow.url}/work`, { connections: 30, duration: 2, timeout: 1 });
      expect(run.result.timeouts).toBeGreaterThan(0);
      expect(run.ok.length).toBe(0);
      expect((await atRest(slow)).shed?.inFlight).toBe(0);
    } finally {
      await slow.stop();
    }
  });

  it("the adaptive limit stays within its bounds and comes down from far above the pool under sustained overload", async () => {
    // 2 slots held 50 ms: 64 in flight queue ~1.6 s against ~50 ms unloaded. One probe at the
    // start (minLimit 2) measures the unloaded latency; slow start resumes at 64.
    const adaptive = { minLimit: 2, maxLimit: 64, initialLimit: 64, probeIntervalMs: 1e9 };
    const overloaded = await startShedServer({ mode: "adaptive", slots: 2, holdMs: 50, burnMs: 0, shed: { adaptive } });
    try {
      const run = await drive(`${overloaded.url}/work`, {
        connections: 40,
        overallRate: 400,
        duration: 8,
        timeout: 30,
      });
      expect(run.statuses[503]).toBeGreaterThan(0);
      expect(run.ok.length).toBeGreaterThan(0);
      const stats = await atRest(overloaded);
      const limits = stats.limits.filter((x): x is number => x !== undefined);
      expect(Math.min(...limits)).toBeGreaterThanOrEqual(2);
      expect(Math.max(...limits)).toBeLessThanOrEqual(64);
      expect(limits).toContain(64); // it did start far above the pool…
      // …and ended near it (2 slots; 8× margin for a noisy machine).
      expect(stats.shed?.limit).toBeLessThanOrEqual(16);
      expect(stats.shed?.inFlight).toBe(0);
    } finally {
      await overloaded.stop();
    }
  });
});

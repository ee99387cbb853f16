// One queue for the fleet on ClusterStore, from outside: a node:cluster primary
// (fleet-cluster-child.mjs, the built package) holds the queue; 4 real worker processes share
// one throttle by name. One log stamped by the one system clock must show: never more than
// `concurrency` running; no window over the rate; no priority or arrival inversion across
// workers; shares within ±10% under equal demand; throughput reported (asserted loosely). A
// worker killed with SIGKILL while holding every slot, with tickets at the head, stops no one.
// Longer runs: FLEET_CLUSTER_JOBS (default 100 per worker).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import {
  type FleetLog,
  inversions,
  mostRunning,
  parseFleetLog,
  shares,
  startsPerSecond,
  windowsOver,
} from "./fleet-cluster-log.ts";

const CHILD = fileURLToPath(new URL("./fleet-cluster-child.mjs", import.meta.url));
const JOBS = Number(process.env.FLEET_CLUSTER_JOBS ?? 100);

/** Runs the cluster application to its end; its log. */
function run(mode: string, options: object, jobs = JOBS, depth = 8): Promise<FleetLog> {
  const proc = spawn(process.execPath, [CHILD, mode, JSON.stringify(options), String(jobs), "7000", String(depth)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let text = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (d: string) => (text += d));
  return new Promise((resolve, reject) => {
    proc.on("error", reject);
    proc.on("close", (code) =>
      code === 0 ? resolve(parseFleetLog(text)) : reject(new Error(`exit ${code}:\n${text}`)),
    );
  });
}

describe("one queue for the fleet on ClusterStore: 4 worker processes", () => {
  beforeAll(() => ensureBuilt());

  it("concurrency 3, jobs of random priority: at most 3 running, no priority or arrival inversion across workers", {
    timeout: 60_000,
  }, async () => {
    const log = await run("burst", { concurrency: 3, leaseMs: 10_000 });
    expect(log.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect([...log.jobs.values()].filter((j) => j.end !== undefined).length).toBe(4 * JOBS);
    expect(mostRunning(log)).toBeLessThanOrEqual(3);
    expect(inversions(log).slice(0, 5)).toEqual([]);
  });

  it("rate 100/s with concurrency 4 under equal demand: no window over the rate, shares within ±10%, throughput reported", {
    timeout: 60_000,
  }, async () => {
    const rate = 100;
    const log = await run("steady", {
      rate: { algorithm: "gcra", limit: rate, periodMs: 1000, burst: 1 },
      concurrency: 4,
      leaseMs: 10_000,
    });
    expect(log.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect(mostRunning(log)).toBeLessThanOrEqual(4);
    // burst 1: at most one admission per 10 ms, so at most `rate` in any second.
    expect(windowsOver(log.admitted, 1000, rate)).toBe(0);
    const share = shares(log, 4);
    const mean = share.reduce((a, b) => a + b, 0) / 4;
    for (const s of share) expect(Math.abs(s - mean) / mean, `shares ${share}`).toBeLessThanOrEqual(0.1);
    const perSecond = startsPerSecond(log);
    console.log(
      `ClusterStore fleet queue: ${perSecond.toFixed(1)} starts/s = ${((perSecond / rate) * 100).toFixed(1)}% of the limit; shares ${share}`,
    );
    // A share of wall time on a shared machine: asserted loosely.
    expect(perSecond / rate).toBeGreaterThanOrEqual(0.5);
  });

  it("SIGKILL a worker holding every slot with tickets at the head: the other worker's jobs all run, none before the kill", {
    timeout: 60_000,
  }, async () => {
    const log = await run("kill", { concurrency: 2, leaseMs: 1500 }, 10);
    const killedAt = log.marks.get("K") as number;
    const holder = [...log.jobs.values()].filter((j) => j.proc === 0);
    const other = [...log.jobs.values()].filter((j) => j.proc === 1);
    expect(holder.filter((j) => j.start !== undefined)).toHaveLength(2);
    expect(log.done).toEqual([{ proc: 1, failed: [], stats: expect.anything() }]);
    expect(other.filter((j) => j.end !== undefined)).toHaveLength(10);
    // Both slots were held until the kill: nothing of the other worker started before it.
    expect(Math.min(...other.map((j) => j.start as number))).toBeGreaterThanOrEqual(killedAt);
  });
});

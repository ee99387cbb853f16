// One queue for the fleet on ClusterStore's `socket` mode (PM2 cluster mode, or any processes of
// one machine), from outside: 4 unrelated processes (fleet-socket-child.mjs, the built package)
// share one throttle by name; the process that bound the socket hosts the store and the queue.
// The fleet checks of fleet-cluster-log.ts (`describeFleet`: most running ≤ concurrency, no
// window over the rate, no priority or arrival inversion, shares within ±10%, a SIGKILLed member
// holding every slot stops no one), then the host's own death: SIGKILLed mid-run while it runs
// jobs and others wait, the others elect a new host, which lets no more than `concurrency` run,
// no window hold more than the rate, and no job run twice; every waiting job is re-queued there
// and runs (none fails). Longer runs: FLEET_SOCKET_JOBS (default 100 per process).
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { describeFleet, mostRunning, runFleet, windowsOver } from "./fleet-cluster-log.ts";

const child = fileURLToPath(new URL("./fleet-socket-child.mjs", import.meta.url));
const JOBS = Number(process.env.FLEET_SOCKET_JOBS ?? 100);

describeFleet(
  "one queue for the fleet on ClusterStore's socket: 4 unrelated processes",
  child,
  JOBS,
  "SIGKILL a member",
);

describe("the socket host SIGKILLed mid-run", () => {
  it("a new host: at most `concurrency` running, no job twice, every other job runs, the survivors' rate units kept", {
    timeout: 60_000,
  }, async () => {
    // Jobs of 50-250 ms (some run across the takeover) under a rate that allows bursts (a new
    // host that forgot the running jobs or the window's starts would let more start at once).
    // A window longer than the new host's grace (1 s), which alone would otherwise let it expire.
    const rate = 30;
    const jobs = 20;
    const log = await runFleet(
      child,
      "kill-host",
      { rate: { algorithm: "sliding-log", limit: rate, windowMs: 3000 }, concurrency: 3, leaseMs: 3000 },
      jobs,
    );
    const killedAt = log.marks.get("K") as number;
    // The host's jobs died with it: those it was running end at the kill.
    for (const j of log.jobs.values()) if (j.proc === 0 && j.start !== undefined) j.end ??= killedAt;
    const others = [...log.jobs.values()].filter((j) => j.proc !== 0);
    expect(log.done.map((d) => [d.proc, d.failed]).sort()).toEqual([
      [1, []],
      [2, []],
      [3, []],
    ]);
    expect(others.filter((j) => j.end !== undefined)).toHaveLength(3 * jobs);
    // The run went on after the new host took over, and jobs were running across it.
    expect(others.filter((j) => (j.start as number) > killedAt).length).toBeGreaterThan(jobs);
    expect(others.some((j) => (j.start as number) < killedAt && (j.end as number) > killedAt)).toBe(true);
    expect(log.twice).toEqual([]);
    expect(mostRunning(log)).toBeLessThanOrEqual(3);
    // The starts the dead host made for its own jobs died with it (documented): the rate holds
    // for the survivors' starts, whose units they brought to the new host.
    const survivors = log.admitted.filter((_, i) => log.admittedBy[i] !== 0);
    expect(windowsOver(survivors, 3000, rate)).toBe(0);
  });
});

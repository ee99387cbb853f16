// One queue for the fleet, from outside: 4 real processes (test/throttle/fleet-queue-child.mjs,
// the built package) on real Redis share one throttle by name. One log of schedules, starts and
// ends, stamped by the one system clock the processes share, must show: never more than
// `concurrency` running; no window over the rate; no priority or arrival inversion among waiting
// jobs across processes; each process's share within ±10% under equal demand; throughput as a
// share of the limit (reported; asserted only with FLEET_QUEUE_STRICT=1, never as a duration). A process killed with
// SIGKILL while holding every slot, with tickets waiting ahead of everyone's, stops no one.
// Longer runs: FLEET_QUEUE_JOBS (default 100 per process).
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { inversions, mostRunning, startWindowsOver, windowsOver } from "./fleet-cluster-log.ts";
import { type ReadyChild, readyChild } from "./ready-child.ts";

const redis = await standaloneRedis("throttle fleet queue");
const CHILD = fileURLToPath(new URL("./fleet-queue-child.mjs", import.meta.url));
const JOBS = Number(process.env.FLEET_QUEUE_JOBS ?? 100);

type Child = ReadyChild;

function child(args: string[]): Promise<Child> {
  return readyChild(CHILD, args, { killedOk: true });
}

interface Log {
  /** Per job: process, priority, scheduled, started, ended. */
  jobs: Map<string, { proc: number; priority: number; queued: number; start?: number; end?: number }>;
  admitted: number[];
  done: Array<{ failed: string[]; commands: number }>;
}

function parse(outputs: string[]): Log {
  const log: Log = { jobs: new Map(), admitted: [], done: [] };
  outputs.forEach((out, proc) => {
    for (const line of out.split("\n")) {
      const [kind, a, b, c] = line.split(" ");
      if (kind === "Q") log.jobs.set(a as string, { proc, priority: Number(b), queued: Number(c) });
      else if (kind === "A") log.admitted.push(Number(a));
      else if (kind === "S") (log.jobs.get(a as string) as { start?: number }).start = Number(b);
      else if (kind === "E") (log.jobs.get(a as string) as { end?: number }).end = Number(b);
      else if (kind === "D") log.done.push(JSON.parse(line.slice(2)));
    }
  });
  return log;
}

async function fleet(options: object, mode: string, jobs = JOBS, depth = 8): Promise<Log> {
  const prefix = uniquePrefix("fleet-queue");
  const children = await Promise.all(
    [0, 1, 2, 3].map((i) =>
      child([redis?.url ?? "", prefix, JSON.stringify(options), String(jobs), String(7000 + i), mode, String(depth)]),
    ),
  );
  for (const c of children) c.proc.stdin?.end("go\n");
  return parse(await Promise.all(children.map((c) => c.output)));
}

describe.skipIf(redis === undefined)("one queue for the fleet on Redis: 4 processes", () => {
  beforeAll(() => ensureBuilt());

  it("concurrency 3, jobs of random priority: at most 3 running, and no priority or arrival inversion across processes", {
    timeout: 60_000,
  }, async () => {
    const log = await fleet({ concurrency: 3, leaseMs: 10_000 }, "burst");
    expect(log.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect([...log.jobs.values()].filter((j) => j.end !== undefined).length).toBe(4 * JOBS);
    expect(mostRunning(log)).toBeLessThanOrEqual(3);
    const inverted = inversions(log);
    expect(inverted.slice(0, 5)).toEqual([]);
  });

  it("rate 100/s with concurrency 4 under equal demand: no window over the rate, shares within ±10%, throughput reported", {
    timeout: 60_000,
  }, async () => {
    const rate = 100;
    const log = await fleet(
      { rate: { algorithm: "gcra", limit: rate, periodMs: 1000, burst: 1 }, concurrency: 4, leaseMs: 10_000 },
      "steady",
    );
    expect(log.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect(mostRunning(log)).toBeLessThanOrEqual(4);
    // burst 1: at most one admission per 10 ms, so at most `rate` in any second.
    expect(windowsOver(log.admitted, 1000, rate)).toBe(0);
    expect(startWindowsOver(log.jobs.values(), 1000, rate)).toBe(0);
    const starts = [...log.jobs.values()].filter((j) => j.start !== undefined);
    // While every process still has demand: until the first process has started all its jobs.
    const lastStart = (p: number) => Math.max(...starts.filter((j) => j.proc === p).map((j) => j.start as number));
    const until = Math.min(...[0, 1, 2, 3].map(lastStart));
    const share = [0, 1, 2, 3].map((p) => starts.filter((j) => j.proc === p && (j.start as number) <= until).length);
    const mean = share.reduce((a, b) => a + b, 0) / 4;
    for (const s of share) expect(Math.abs(s - mean) / mean, `shares ${share}`).toBeLessThanOrEqual(0.1);
    const t = starts.map((j) => j.start as number);
    const perSecond = ((t.length - 1) * 1000) / (Math.max(...t) - Math.min(...t));
    const commands = log.done.reduce((n, d) => n + d.commands, 0) / t.length;
    console.log(
      `fleet queue: ${perSecond.toFixed(1)} starts/s = ${((perSecond / rate) * 100).toFixed(1)}% of the limit; shares ${share}; ${commands.toFixed(2)} client commands per job`,
    );
    // 93-96% measured alone on the loaded 2-core machine, 64-84% with other fleets beside it and
    // 29% in a full suite run at load ~40 (flaky32): a share of wall time that 4 processes on 2
    // busy cores cannot hold, so it is printed, not asserted (the issue asks it of the bench, "no
    // timed tests"; FLEET_QUEUE_STRICT=1 asserts the 80% bound). What the per-process queues this
    // replaces fail, load or not, is the shares above (100,80,73,84 in one run).
    if (process.env.FLEET_QUEUE_STRICT) expect(perSecond / rate).toBeGreaterThanOrEqual(0.8);
  });

  it("SIGKILL a process holding every slot with tickets ahead of everyone's: the others take its slots after leaseMs", {
    timeout: 60_000,
  }, async () => {
    const prefix = uniquePrefix("fleet-queue-kill");
    const options = JSON.stringify({ concurrency: 2, leaseMs: 1500 });
    const holder = await child([redis?.url ?? "", prefix, options, "6", "1", "hold"]);
    holder.proc.stdin?.end("go\n");
    // It holds both slots, and 4 of its tickets (priority 0) wait at the head of the queue.
    for (let i = 0; i < 500 && (holder.text().match(/^S /gm) ?? []).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((holder.text().match(/^S /gm) ?? []).length).toBe(2);
    const other = await child([redis?.url ?? "", prefix, options, "10", "2", "burst"]);
    other.proc.stdin?.end("go\n");
    await new Promise((r) => setTimeout(r, 200));
    const killedAt = Date.now();
    holder.proc.kill("SIGKILL");
    await holder.output;
    const log = parse([await other.output]);
    expect(log.done[0]?.failed).toEqual([]);
    const starts = [...log.jobs.values()].map((j) => j.start as number);
    expect(starts.length).toBe(10);
    // Nothing of the other process started while the holder held both slots.
    expect(starts.every((s) => s >= killedAt)).toBe(true);
    expect(mostRunning(log)).toBeLessThanOrEqual(2);
  });
});

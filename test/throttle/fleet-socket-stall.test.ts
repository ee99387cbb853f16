// A process must never hang silently: 4 unrelated processes on ClusterStore's `socket`, each a
// throttle with `fleet: false` (per-process queues asking the shared store, retrying after each
// refusal's 1-5 ms), every process descheduled now and then (fleet-socket-preempt.mjs). Every
// job runs. Before the fix in src/core/clock.ts (`after` could fire inside the call arming it),
// one member stopped with its jobs queued and no error: the bench hung at load ~26, and this
// test hangs within a few dozen jobs.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { parseFleetLog } from "./fleet-cluster-log.ts";

const child = fileURLToPath(new URL("./fleet-socket-child.mjs", import.meta.url));
const preempt = fileURLToPath(new URL("./fleet-socket-preempt.mjs", import.meta.url));
const JOBS = 40;
/** A fleet not done by then has a member that stopped (it takes a few seconds on a loaded machine). */
const LIMIT_MS = 40_000;

describe("ClusterStore socket, fleet: false, processes descheduled at random", () => {
  beforeAll(() => ensureBuilt());

  it("every queued job runs: no member stops with jobs waiting", { timeout: LIMIT_MS + 10_000 }, async () => {
    const options = {
      rate: { algorithm: "gcra", limit: 200, periodMs: 1000, burst: 1 },
      concurrency: 8,
      leaseMs: 10_000,
      fleet: false,
    };
    const proc = spawn(process.execPath, [child, "steady", JSON.stringify(options), String(JOBS), "7000", "8"], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${preempt}` },
    });
    let text = "";
    proc.stdout.setEncoding("utf8");
    proc.stdout.on("data", (d: string) => (text += d));
    const timer = setTimeout(() => proc.kill("SIGTERM"), LIMIT_MS);
    const code = await new Promise((resolve) => proc.on("close", resolve));
    clearTimeout(timer);
    const log = parseFleetLog(text);
    const started = [0, 1, 2, 3].map(
      (p) => [...log.jobs.values()].filter((j) => j.proc === p && j.start !== undefined).length,
    );
    expect(started, "jobs started per member (a member that stopped has fewer)").toEqual([JOBS, JOBS, JOBS, JOBS]);
    expect(code).toBe(0);
    expect(log.done.map((d) => d.failed)).toEqual([[], [], [], []]);
  });
});

// A throttle fleet on real Redis: 4 processes (test/throttle/fleet-child.mjs, the built package)
// × 300 jobs of random priority and duration share one throttle by name. A log of admissions,
// starts and ends, timestamped by the one system clock the processes share, must show no
// window holding more than the rate, and (with `concurrency`) never more than `concurrency`
// running at once. A second fleet calls an upstream simulator with its own limit through
// `throttle.fetch`: at most one 429 per pause.
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { startUpstream } from "../support/upstream-server.mjs";
import { START_LAG_MS } from "./fleet-cluster-log.ts";
import { type ReadyChild, readyChild } from "./ready-child.ts";

const redis = await standaloneRedis("throttle fleet");
const CHILD = fileURLToPath(new URL("./fleet-child.mjs", import.meta.url));
const PROCESSES = 4;

interface FleetRun {
  admitted: number[];
  pauses: Array<{ at: number; ms: number }>;
  spans: Array<{ start: number; end: number }>;
  done: Array<{ stats: Record<string, number>; failed: string[]; statuses: number[] }>;
}

function child(args: string[]): Promise<ReadyChild> {
  return readyChild(CHILD, args);
}

/** Runs the fleet and parses its log. */
async function fleet(options: object, jobs: number, upstream?: string): Promise<FleetRun> {
  const prefix = uniquePrefix("throttle-fleet");
  const children = await Promise.all(
    Array.from({ length: PROCESSES }, (_, i) =>
      child([
        redis?.url ?? "",
        prefix,
        JSON.stringify(options),
        String(jobs),
        String(1000 + i),
        ...(upstream ? [upstream] : []),
      ]),
    ),
  );
  for (const c of children) c.proc.stdin?.end("go\n");
  const outputs = await Promise.all(children.map((c) => c.output));
  const run: FleetRun = { admitted: [], pauses: [], spans: [], done: [] };
  const starts = new Map<string, number>();
  for (const line of outputs.join("\n").split("\n")) {
    const [kind, a, b] = line.split(" ");
    if (kind === "A") run.admitted.push(Number(a));
    else if (kind === "P") run.pauses.push({ at: Number(a), ms: Number(b) });
    else if (kind === "S") starts.set(a as string, Number(b));
    else if (kind === "E") run.spans.push({ start: starts.get(a as string) as number, end: Number(b) });
    else if (kind === "D") run.done.push(JSON.parse(line.slice(2)));
  }
  return run;
}

/**
 * How far a process's stamp may trail another's at the store (ms): see windowsOver. It covers the
 * processes' clock offsets (each anchors systemClock to the wall clock once, at its start) and
 * the time between reading the clock and the script running in Redis (on a loaded 2-core
 * machine, event-loop lag of tens of ms).
 */
const SKEW_MS = 25;

/**
 * Fixed windows of `windowMs` holding more than `limit` admissions. Each process stamps its
 * decisions with its own reading of the clock; a request stamped just before a boundary can
 * reach the store after another process's request of the next window, and the store (whose clock
 * never runs back) counts it in that next window. So a window may show one extra admission for
 * each admission stamped within SKEW_MS of its end; anything beyond that is a real excess.
 */
function windowsOver(admitted: number[], windowMs: number, limit: number, lagMs = 0): string[] {
  const counts = new Map<number, { all: number; late: number }>();
  for (const at of admitted) {
    const w = Math.floor(at / windowMs);
    const c = counts.get(w) ?? { all: 0, late: 0 };
    c.all++;
    if (at % windowMs >= windowMs - SKEW_MS || at % windowMs < lagMs) c.late++;
    counts.set(w, c);
  }
  return [...counts]
    .filter(([, c]) => c.all - c.late > limit)
    .map(([w, c]) => `window ${w}: ${c.all} (${c.late} late)`);
}

/**
 * Fixed windows over the rate by the tasks' own logged starts (issue 32 judges starts): a start
 * within START_LAG_MS of a window's beginning may be a unit of the window before, started late.
 */
function startsOver(run: FleetRun, windowMs: number, limit: number): string[] {
  return windowsOver(
    run.spans.map((s) => s.start),
    windowMs,
    limit,
    START_LAG_MS,
  );
}

/** The most spans open at once (an end at the same instant as a start closes first). */
function mostRunning(spans: Array<{ start: number; end: number }>): number {
  const edges = spans.flatMap((s) => [
    [s.start, 1],
    [s.end, -1],
  ]);
  edges.sort((x, y) => (x[0] as number) - (y[0] as number) || (x[1] as number) - (y[1] as number));
  let now = 0;
  let most = 0;
  for (const [, d] of edges) {
    now += d as number;
    most = Math.max(most, now);
  }
  return most;
}

describe.skipIf(redis === undefined)("a throttle fleet on Redis: 4 processes", () => {
  beforeAll(() => ensureBuilt());

  it("300 jobs each: no window holds more than the rate", { timeout: 120_000 }, async () => {
    const windowMs = 1000;
    const limit = 240;
    const run = await fleet({ rate: { algorithm: "fixed-window", limit, windowMs } }, 300);
    expect(run.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect(run.admitted.length).toBe(1200);
    expect(run.spans.length).toBe(1200);
    expect(windowsOver(run.admitted, windowMs, limit)).toEqual([]);
    expect(startsOver(run, windowMs, limit)).toEqual([]);
  });

  it("with concurrency: never more than `concurrency` running, no window over the rate", {
    timeout: 120_000,
  }, async () => {
    const windowMs = 1000;
    const limit = 240;
    const run = await fleet(
      { rate: { algorithm: "fixed-window", limit, windowMs }, concurrency: 5, leaseMs: 5000 },
      300,
    );
    expect(run.done.map((d) => d.failed)).toEqual([[], [], [], []]);
    expect(run.spans.length).toBe(1200);
    expect(mostRunning(run.spans)).toBeLessThanOrEqual(5);
    expect(windowsOver(run.admitted, windowMs, limit)).toEqual([]);
    expect(startsOver(run, windowMs, limit)).toEqual([]);
  });

  it("throttle.fetch against an upstream with its own limit: one 429 per pause, and it pauses the whole fleet", {
    timeout: 120_000,
  }, async () => {
    const upstream = await startUpstream({ limit: 10, windowMs: 1000, mode: "retry-after" });
    try {
      // 50 requests a second offered to an upstream that takes 10: the fleet learns from the 429s.
      // One request at a time across the fleet: the first 429 of a window is its only one.
      const rate = { algorithm: "gcra", limit: 50, periodMs: 1000, burst: 1 };
      const run = await fleet({ rate, concurrency: 1 }, 15, upstream.url);
      expect(run.done.map((d) => d.failed)).toEqual([[], [], [], []]);
      expect(run.done.flatMap((d) => d.statuses).every((s) => s === 200)).toBe(true);
      expect(run.pauses.length).toBeGreaterThan(0);
      // Once a process has paused the key (its block is written a round trip later), no process
      // of the fleet admits a request until the pause ends.
      const during = run.admitted.filter((a) => run.pauses.some((p) => a > p.at + 20 && a < p.at + p.ms - SKEW_MS));
      expect(during).toEqual([]);
      const per = new Map<number, number>();
      for (const e of upstream.log) if (e.status === 429) per.set(e.window, (per.get(e.window) ?? 0) + 1);
      expect([...per.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await upstream.close();
    }
  });
});

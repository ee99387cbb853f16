// The log of a fleet run from outside (fleet-cluster*.test.ts, fleet-threads*.test.ts): lines
// `<process> <kind> ...` stamped by the one system clock, and the checks the fleet must pass.
// (The same checks as fleet-queue.test.ts's for Redis, where they are inline.)

/** One job of the run. */
export interface Job {
  proc: number;
  priority: number;
  queued: number;
  start?: number;
  end?: number;
}

/** A parsed run. */
export interface FleetLog {
  jobs: Map<string, Job>;
  admitted: number[];
  done: Array<{ proc: number; failed: string[] }>;
  /** Other lines by kind (e.g. "K": a kill's instant). */
  marks: Map<string, number>;
}

/** Parses `<proc> <kind> a b c` lines. */
export function parseFleetLog(text: string): FleetLog {
  const log: FleetLog = { jobs: new Map(), admitted: [], done: [], marks: new Map() };
  for (const line of text.split("\n")) {
    const [p, kind, a, b, c] = line.split(" ");
    const proc = Number(p);
    if (kind === "Q") log.jobs.set(a as string, { proc, priority: Number(b), queued: Number(c) });
    else if (kind === "A") log.admitted.push(Number(a));
    else if (kind === "S") (log.jobs.get(a as string) as Job).start = Number(b);
    else if (kind === "E") (log.jobs.get(a as string) as Job).end = Number(b);
    else if (kind === "D") log.done.push({ proc, ...JSON.parse(line.slice(line.indexOf("{"))) });
    else if (kind === "K") log.marks.set("K", Number(a));
  }
  return log;
}

/** The most jobs running at once (an end at the same instant as a start closes first). */
export function mostRunning(log: FleetLog): number {
  const edges: Array<[number, number]> = [];
  for (const j of log.jobs.values()) {
    if (j.start !== undefined) edges.push([j.start, 1], [j.end ?? Number.POSITIVE_INFINITY, -1]);
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) {
    now += d;
    most = Math.max(most, now);
  }
  return most;
}

/** Sliding windows of `windowMs` (starting at each admission) holding more than `limit` admissions. */
export function windowsOver(admitted: number[], windowMs: number, limit: number): number {
  const at = [...admitted].sort((a, b) => a - b);
  let over = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while ((at[j] as number) <= (at[i] as number) - windowMs) j++;
    if (i - j + 1 > limit) over++;
  }
  return over;
}

/** Margin for instants stamped by different processes on a loaded machine: within it is no inversion. */
export const MARGIN_MS = 250;

/**
 * Jobs that started while a job of strictly higher priority, or of equal priority scheduled
 * earlier, had been waiting since before (both by more than MARGIN_MS): inversions.
 */
export function inversions(log: FleetLog): string[] {
  const jobs = [...log.jobs.entries()].filter(([, j]) => j.start !== undefined);
  const out: string[] = [];
  for (const [x, jx] of jobs) {
    for (const [y, jy] of jobs) {
      if (x === y) continue;
      const better = jy.priority < jx.priority || (jy.priority === jx.priority && jy.queued + MARGIN_MS < jx.queued);
      if (
        better &&
        jy.queued + MARGIN_MS < (jx.start as number) &&
        (jy.start as number) > (jx.start as number) + MARGIN_MS
      ) {
        out.push(`${x} (p${jx.priority}) started before ${y} (p${jy.priority})`);
      }
    }
  }
  return out;
}

/** Starts per process while every process still had demand (until the first one started its last job). */
export function shares(log: FleetLog, procs: number): number[] {
  const starts = [...log.jobs.values()].filter((j) => j.start !== undefined);
  const lastStart = (p: number) => Math.max(...starts.filter((j) => j.proc === p).map((j) => j.start as number));
  const all = Array.from({ length: procs }, (_, p) => p);
  const until = Math.min(...all.map(lastStart));
  return all.map((p) => starts.filter((j) => j.proc === p && (j.start as number) <= until).length);
}

/** Starts per second over the run. */
export function startsPerSecond(log: FleetLog): number {
  const t = [...log.jobs.values()].filter((j) => j.start !== undefined).map((j) => j.start as number);
  return ((t.length - 1) * 1000) / (Math.max(...t) - Math.min(...t));
}

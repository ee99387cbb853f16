/**
 * The run both outage tests share (fleet-queue-restart.test.ts: a Redis restart;
 * fleet-queue-sentinel.test.ts: a Sentinel failover): throttles on one queue each schedule
 * `jobs` jobs of priority i % 10 that record their runs; the 10th start triggers the outage,
 * and each job lasts 10 ms (after `hold`, which may keep jobs started after the trigger until
 * the outage is under way). Then the checks every such run must pass: no job ran twice, every
 * job that ran resolved with its own value, every other was rejected with an Error.
 */
import { expect } from "vitest";
import type { Throttle } from "../../src/index.ts";

/** What an outage run saw. */
export interface OutageRun {
  /** The values of the jobs that resolved. */
  readonly resolved: string[];
  /** The `error` events of the throttles. */
  readonly errors: unknown[];
}

/** Runs the jobs through the outage `trigger` starts (awaited before returning) and checks them. */
export async function runThroughOutage(
  throttles: readonly Throttle[],
  trigger: () => Promise<void>,
  options: { jobs?: number; hold?: (started: number, outage: Promise<void> | undefined) => Promise<void> } = {},
): Promise<OutageRun> {
  const errors: unknown[] = [];
  for (const t of throttles) t.on("error", (e) => errors.push(e.error));
  const runs = new Map<string, number>();
  let started = 0;
  let outage: Promise<void> | undefined;
  const jobs = throttles.flatMap((t, p) =>
    Array.from({ length: options.jobs ?? 40 }, (_, i) =>
      t.schedule(
        async () => {
          const id = `${p}-${i}`;
          runs.set(id, (runs.get(id) ?? 0) + 1);
          started++;
          if (started === 10) outage = trigger();
          else await options.hold?.(started, outage);
          await new Promise((r) => setTimeout(r, 10));
          return id;
        },
        { priority: i % 10 },
      ),
    ),
  );
  const results = await Promise.allSettled(jobs);
  await outage;
  const resolved = results
    .filter((r) => r.status === "fulfilled")
    .map((r) => (r as PromiseFulfilledResult<string>).value);
  // No job ran twice, and every job that ran resolved with its own value.
  expect([...runs.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect(new Set(resolved)).toEqual(new Set(runs.keys()));
  // Every job settled (allSettled returned), and those that did not run were rejected with a reason.
  for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(Error);
  return { resolved, errors };
}

// The throttle's ordering and accounting under random traffic (seeded: fast-check runs from
// SLUICE_SEED and prints the seed and path of a failure). Jobs arrive on a ManualClock with
// random keys, priorities, costs, durations, failures, aborts, maxWaitMs and timeoutMs; one log
// of queue, start, end and removal events, in the order they happened, must show:
// - never more than `concurrency` running per key, never more than the window's limit started;
// - no job starts while an earlier job of its key with the same or a higher priority waits;
// - every caller's promise settles once, as stats() counts it; nothing is left queued or running.
import fc from "fast-check";
import { createThrottle, ManualClock, type ScheduleOptions } from "sluice";
import { describe, expect, it } from "vitest";
import { runs } from "../../test/support/seed.ts";

const T0 = Date.UTC(2026, 11, 7);
const TICK = 100;
const WINDOW = 1000;

interface Plan {
  at: number;
  key: string;
  priority: number;
  cost: number;
  ticks: number;
  fails: boolean;
  abortAfter: number | undefined;
  maxWaitMs: number | undefined;
  timeoutMs: number | undefined;
}

const plan = fc.record<Plan>({
  at: fc.integer({ min: 0, max: 30 }),
  key: fc.constantFrom("a", "b"),
  priority: fc.integer({ min: 0, max: 9 }),
  cost: fc.integer({ min: 1, max: 3 }),
  ticks: fc.integer({ min: 0, max: 12 }),
  fails: fc.boolean(),
  abortAfter: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
  maxWaitMs: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined }),
  timeoutMs: fc.option(fc.integer({ min: 1, max: 1500 }), { nil: undefined }),
});

type Event = { kind: "queued" | "start" | "end" | "removed"; job: number; key: string; t: number };

describe("createThrottle: ordering and accounting (seeded property)", () => {
  it("holds its limits and its order, and counts every job once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(plan, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 3, max: 5 }),
        fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        async (plans, limit, concurrency) => {
          const clock = new ManualClock(T0);
          const throttle = createThrottle({
            rate: { algorithm: "fixed-window", limit, windowMs: WINDOW },
            ...(concurrency === undefined ? {} : { concurrency }),
            clock,
          });
          const log: Event[] = [];
          const running: Array<{ job: number; endsAt: number; finish: () => void }> = [];
          const settled = new Map<number, "done" | "rejected">();
          const controllers = new Map<number, AbortController>();
          const order = plans.map((_, i) => i).sort((x, y) => (plans[x] as Plan).at - (plans[y] as Plan).at || x - y);
          let next = 0;
          for (let tick = 0; tick <= 400; tick++) {
            const now = clock.now();
            for (const r of running.filter((r) => r.endsAt <= now)) {
              running.splice(running.indexOf(r), 1);
              r.finish();
            }
            while (next < order.length && (plans[order[next] as number] as Plan).at <= tick) {
              const i = order[next++] as number;
              const p = plans[i] as Plan;
              const options: ScheduleOptions = { key: p.key, priority: p.priority, cost: p.cost };
              if (p.maxWaitMs !== undefined) options.maxWaitMs = p.maxWaitMs;
              if (p.timeoutMs !== undefined) options.timeoutMs = p.timeoutMs;
              if (p.abortAfter !== undefined) {
                const c = new AbortController();
                controllers.set(i, c);
                options.signal = c.signal;
              }
              log.push({ kind: "queued", job: i, key: p.key, t: now });
              throttle
                .schedule(
                  () =>
                    new Promise<void>((resolve, reject) => {
                      log.push({ kind: "start", job: i, key: p.key, t: clock.now() });
                      running.push({
                        job: i,
                        endsAt: clock.now() + p.ticks * TICK,
                        finish: () => {
                          log.push({ kind: "end", job: i, key: p.key, t: clock.now() });
                          if (p.fails) reject(new Error(`job ${i} failed`));
                          else resolve();
                        },
                      });
                    }),
                  options,
                )
                .then(
                  () => settled.set(i, "done"),
                  () => {
                    expect(settled.has(i)).toBe(false);
                    settled.set(i, "rejected");
                    if (!log.some((e) => e.job === i && e.kind === "start")) {
                      log.push({ kind: "removed", job: i, key: p.key, t: clock.now() });
                    }
                  },
                );
            }
            for (const [i, c] of controllers) {
              const p = plans[i] as Plan;
              if (!c.signal.aborted && tick >= p.at + (p.abortAfter as number)) c.abort(new Error("aborted"));
            }
            await new Promise<void>((resolve) => setImmediate(resolve));
            if (next === order.length && settled.size === plans.length && running.length === 0) break;
            clock.advance(TICK);
          }
          expect(settled.size).toBe(plans.length);

          // Limits: running per key ≤ concurrency; starts per window and key ≤ limit (in units).
          const inFlight = new Map<string, number>();
          const units = new Map<string, number>();
          for (const e of log) {
            if (e.kind === "start") {
              const n = (inFlight.get(e.key) ?? 0) + 1;
              inFlight.set(e.key, n);
              if (concurrency !== undefined) expect(n).toBeLessThanOrEqual(concurrency);
              const w = `${e.key}@${Math.floor(e.t / WINDOW)}`;
              const u = (units.get(w) ?? 0) + (plans[e.job] as Plan).cost;
              units.set(w, u);
              expect(u).toBeLessThanOrEqual(limit);
            } else if (e.kind === "end") inFlight.set(e.key, (inFlight.get(e.key) ?? 0) - 1);
          }

          // Order: when a job starts, no job of its key that came earlier with the same or a
          // higher priority (or later with a strictly higher one) is still waiting.
          const waiting = new Map<string, Set<number>>();
          for (const e of log) {
            const set = waiting.get(e.key) ?? new Set<number>();
            waiting.set(e.key, set);
            if (e.kind === "queued") set.add(e.job);
            else if (e.kind === "removed") set.delete(e.job);
            else if (e.kind === "start") {
              set.delete(e.job);
              const me = plans[e.job] as Plan;
              for (const other of set) {
                const o = plans[other] as Plan;
                const ahead =
                  o.priority < me.priority || (o.priority === me.priority && other < e.job && o.at <= me.at);
                expect(ahead, `job ${e.job} (p${me.priority}) started while job ${other} (p${o.priority}) waited`).toBe(
                  false,
                );
              }
            }
          }

          // Accounting: every promise settled once, as stats() counts them.
          const stats = throttle.stats();
          expect(stats.queued).toBe(0);
          expect(stats.running).toBe(0);
          expect(stats.done).toBe([...settled.values()].filter((s) => s === "done").length);
          expect(stats.failed + stats.expired).toBe([...settled.values()].filter((s) => s === "rejected").length);
          await throttle.close();
        },
      ),
      { numRuns: runs(60) },
    );
  });
});

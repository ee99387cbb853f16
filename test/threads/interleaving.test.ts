// A differential test across threads: one seeded trace of checks, peeks, refunds and resets over
// every algorithm, a composite and a ban, split across 4 worker threads in a fixed interleaving
// (step j runs in its thread when a shared counter reaches j: Atomics.wait / notify), decides
// exactly as one MemoryStore replaying the trace in one thread.
import fc from "fast-check";
import { createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type RuleDef, spawnWorker } from "./support.ts";

beforeAll(() => ensureBuilt(), 180_000);

const RULES: RuleDef[] = [
  { name: "fw", spec: { algorithm: "fixed-window", limit: 4, windowMs: 1000 } },
  { name: "sl", spec: { algorithm: "sliding-log", limit: 4, windowMs: 1000 } },
  { name: "sw", spec: { algorithm: "sliding-window", limit: 5, windowMs: 800 } },
  { name: "tb", spec: { algorithm: "token-bucket", capacity: 4, refillPerSecond: 3 } },
  { name: "gc", spec: { algorithm: "gcra", limit: 3, periodMs: 900, burst: 4 } },
  { name: "lb", spec: { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 4 } },
  {
    name: "both",
    spec: [
      { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 2 },
    ],
    ban: { after: 2, withinMs: 1500, forMs: 700 },
  },
];
const THREADS = 4;
/** Worker start-up dominates on a busy 2-core machine: well above vitest's default 20 s. */
const SLOW = 90_000;

interface Step {
  thread: number;
  rule: number;
  key: string;
  cost: number;
  op: "check" | "peek" | "refund" | "reset";
  at: number;
}

const SEED = 18_018;

/** The seeded trace: mostly checks, at instants that move forward (mostly by 0–2 ms, now and then by up to 400). */
function trace(length: number, start: number): Step[] {
  const step = fc.record({
    thread: fc.integer({ min: 0, max: THREADS - 1 }),
    rule: fc.integer({ min: 0, max: RULES.length - 1 }),
    key: fc.constantFrom("a", "b", "c"),
    cost: fc.integer({ min: 1, max: 2 }),
    op: fc.constantFrom<Step["op"]>("check", "check", "check", "check", "check", "peek", "refund", "reset"),
    gap: fc.oneof(
      { weight: 12, arbitrary: fc.integer({ min: 0, max: 2 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 400 }) },
    ),
  });
  const [raw] = fc.sample(fc.array(step, { minLength: length, maxLength: length }), { seed: SEED, numRuns: 1 });
  let at = start;
  return (raw ?? []).map(({ gap, ...s }) => {
    at += gap;
    return { ...s, at };
  });
}

describe("one seeded trace split across 4 threads in a fixed interleaving", () => {
  for (const start of [0, 1_800_000_000_000]) {
    it(
      `decides exactly as one MemoryStore (every algorithm, a composite with a ban; epoch ${start})`,
      async () => {
        const steps = trace(1500, start);
        // The expected decisions: one MemoryStore, one thread.
        const clock = new ManualClock(start);
        const store = new MemoryStore();
        const limiters = RULES.map((r) =>
          createLimiter(r.spec as never, {
            store,
            clock,
            name: r.name,
            ...(r.ban === undefined ? {} : { ban: r.ban }),
          }),
        );
        const expected = steps.map((s) => {
          clock.set(s.at);
          const l = limiters[s.rule] as (typeof limiters)[number];
          const d =
            s.op === "check"
              ? l.tryAcquire(s.key, s.cost)
              : s.op === "peek"
                ? l.peek(s.key, s.cost)
                : s.op === "refund"
                  ? l.refund(s.key, s.cost)
                  : l.reset(s.key);
          return (d as Decision | undefined) ?? null;
        });

        const shared = new SharedMemoryStore({ maxKeys: 256, recordWords: 8 });
        const control = new Int32Array(new SharedArrayBuffer(8));
        const workers = Array.from({ length: THREADS }, (_, t) =>
          spawnWorker<{ decisions: Record<number, Decision | null> }>(shared.handle, {
            kind: "trace",
            rules: RULES,
            control: control.buffer as SharedArrayBuffer,
            steps: steps.flatMap((s, j) => (s.thread === t ? [[j, s]] : [])),
          }),
        );
        const results = await Promise.all(workers.map((w) => w.result));
        const actual = steps.map((s, j) => results[s.thread]?.decisions[j]);
        expect(actual).toEqual(expected);
        // The trace exercised what it claims: admissions, denials, bans, every thread.
        expect(expected.filter((d) => d?.allowed === true).length).toBeGreaterThan(300);
        expect(expected.filter((d) => d?.allowed === false).length).toBeGreaterThan(100);
        expect(expected.some((d) => d?.banned === true)).toBe(true);
        expect(new Set(steps.map((s) => s.thread)).size).toBe(THREADS);
      },
      SLOW,
    );
  }
});

// The start-safe rate under random buckets and start lags (seeded: fast-check runs from
// SLUICE_SEED and prints the seed and path of a failure). A shared store grants on the widened
// rule (startSafeRate); each task starts up to START_TOLERANCE_MS after its grant (a later start
// re-takes its unit at its real start, runner.ts). The real starts, checked in order by the
// user's own rule on a fresh limiter, must all pass. Only buckets the rule covers: one with a
// unit of burst left after the tolerance's refill. (One whose whole burst the tolerance refills,
// every burst 1 included, keeps burst 1 and is not covered, docs/throttle.md: with it, this
// property fails, e.g. a token bucket of capacity 1 at 5 a second.)
import fc from "fast-check";
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { runs } from "../../test/support/seed.ts";
import type { AlgorithmSpec } from "../algorithms/specs.ts";
import { START_TOLERANCE_MS, startSafeSpec } from "./start-safe-rate.ts";

const T0 = Date.UTC(2026, 11, 7);
const JOBS = 40;

const bucket = fc
  .record({
    gcra: fc.boolean(),
    perSecond: fc.integer({ min: 5, max: 400 }),
    burst: fc.integer({ min: 1, max: 12 }),
    lags: fc.array(fc.integer({ min: 0, max: START_TOLERANCE_MS }), { minLength: JOBS, maxLength: JOBS }),
  })
  // Covered: a unit of burst left once the tolerance's refill, ⌈20 ms × rate⌉, is taken off.
  .filter(({ perSecond, burst }) => burst - Math.ceil((START_TOLERANCE_MS * perSecond) / 1000) >= 1)
  .map(({ gcra, perSecond, burst, lags }) => ({
    spec: (gcra
      ? { algorithm: "gcra", limit: perSecond, periodMs: 1000, burst }
      : { algorithm: "token-bucket", capacity: burst, refillPerSecond: perSecond }) as AlgorithmSpec,
    lags,
  }));

/** The instants a limiter of `spec` grants JOBS unit jobs at, each as soon as it allows. */
function grants(spec: AlgorithmSpec): number[] {
  const clock = new ManualClock(T0);
  const limiter = createLimiter(spec, { store: new MemoryStore(), clock, name: "granted" });
  const out: number[] = [];
  while (out.length < JOBS) {
    const d = limiter.tryAcquire("k") as { allowed: boolean; retryAfterMs: number };
    if (d.allowed) out.push(clock.now());
    else clock.advance(Math.max(1, Math.ceil(d.retryAfterMs)));
  }
  return out;
}

describe("startSafeRate: real starts up to the tolerance late still hold the user's rule", () => {
  it("gcra and token buckets with a unit of burst left after the tolerance's refill", () => {
    fc.assert(
      fc.property(bucket, ({ spec, lags }) => {
        const starts = grants(startSafeSpec(spec, START_TOLERANCE_MS))
          .map((at, i) => at + (lags[i] as number))
          .sort((a, b) => a - b);
        const clock = new ManualClock(T0);
        const user = createLimiter(spec, { store: new MemoryStore(), clock, name: "user" });
        for (const [i, at] of starts.entries()) {
          clock.set(at);
          const d = user.tryAcquire("k") as { allowed: boolean };
          expect(d.allowed, `start ${i} at +${at - T0} ms of ${JSON.stringify(spec)}`).toBe(true);
        }
      }),
      { numRuns: runs(200) },
    );
  });
});

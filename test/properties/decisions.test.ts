// Decision invariants across all six algorithms (docs/semantics.md §4–§6): honest retryAfterMs, figures that
// are finite non-negative integers, gcra = token bucket, composites all-or-nothing, and a
// MemoryStore that drops fresh state deciding exactly like a table that never forgets.
import fc from "fast-check";
import { type AlgorithmSpec, algorithmFor, createLimiter, type Decision, ManualClock, specLimit } from "sluice";
import { describe, expect, it } from "vitest";
import { Counted } from "../support/counted.ts";
import { RuleOracle } from "../support/oracle.ts";
import { runs } from "../support/seed.ts";
import { specArb, startArb, traceArb, WHOLE_T } from "./arbitraries.ts";

/** Checks the shape docs/semantics.md §4 promises for one decision of a rule reporting `limit`. */
function checkFigures(d: Decision, cost: number, limit: number, leaky: boolean): void {
  expect(d.limit).toBe(limit);
  for (const figure of [d.remaining, d.resetMs, d.delayMs]) {
    expect(Number.isSafeInteger(figure) && figure >= 0, JSON.stringify(d)).toBe(true);
  }
  expect(d.remaining).toBeLessThanOrEqual(limit);
  if (cost > limit) expect(d).toMatchObject({ allowed: false, retryAfterMs: Number.POSITIVE_INFINITY });
  else if (d.allowed) expect(d.retryAfterMs).toBe(0);
  else expect(Number.isSafeInteger(d.retryAfterMs) && d.retryAfterMs >= 1, JSON.stringify(d)).toBe(true);
  if (!leaky || !d.allowed) expect(d.delayMs).toBe(0);
}

describe("decision invariants", () => {
  it("every figure is a finite non-negative integer (Infinity only for cost > limit), even with the clock stepping back", () => {
    fc.assert(
      fc.property(
        specArb(false),
        startArb,
        fc.array(fc.record({ dt: fc.integer({ min: -3000, max: 3000 }), cost: fc.integer({ min: 1, max: 10 }) }), {
          maxLength: 60,
        }),
        (spec, start, steps) => {
          const clock = new ManualClock(start);
          const limiter = createLimiter(spec, clock);
          const limit = specLimit(spec);
          for (const { dt, cost } of steps) {
            clock.set(Math.max(0, clock.now() + dt));
            checkFigures(limiter.peek("k", cost), cost, limit, spec.algorithm === "leaky-bucket");
            checkFigures(limiter.tryAcquire("k", cost), cost, limit, spec.algorithm === "leaky-bucket");
          }
        },
      ),
      { numRuns: runs(400) },
    );
  });

  it("a client returning at retryAfterMs passes; where docs/semantics.md §5 makes it exact, 1 ms earlier it does not", () => {
    const check = (exact: boolean) => {
      // Runs whose final peek is allowed, or can never pass (cost > limit), have no retry to
      // check: counted, so the property fails if too few runs reach the assertions.
      const seen = new Counted();
      fc.assert(
        fc.property(
          specArb(exact),
          startArb,
          traceArb({ maxCost: 4 }),
          fc.integer({ min: 1, max: 8 }),
          (spec, start, trace, pick) => {
            const clock = new ManualClock(start);
            const limiter = createLimiter(spec, clock);
            for (const step of trace) {
              clock.advance(step.gap);
              limiter.tryAcquire("k", step.cost);
            }
            // A cost up to the limit (one past it now and then): most runs end on a real retry.
            const limit = specLimit(spec);
            const cost = pick > limit ? limit + (pick % 5 === 0 ? 1 : 0) : pick;
            const now = clock.now();
            const denied = limiter.peek("k", cost);
            if (denied.allowed) return void seen.hit("allowed");
            if (!Number.isFinite(denied.retryAfterMs)) return void seen.hit("never");
            seen.hit("checked");
            if (exact && denied.retryAfterMs > 1) {
              clock.set(now + denied.retryAfterMs - 1);
              expect(limiter.peek("k", cost).allowed, "1 ms early").toBe(false);
              seen.hit("1 ms early");
            }
            clock.set(now + denied.retryAfterMs);
            expect(limiter.tryAcquire("k", cost).allowed, "at retryAfterMs").toBe(true);
          },
        ),
        { numRuns: runs(500) },
      );
      seen.expectAtLeast({ checked: 250, "1 ms early": exact ? 150 : 0 });
    };
    check(true);
    check(false);
  });

  it("gcra with burst = limit decides exactly like the token bucket of capacity limit, rate 1000·limit/periodMs", () => {
    // periodMs = limit·T with T dividing 1000: gcra's T is whole and the bucket's rate 1000/T is
    // a whole number of tokens per second, so both sides compute in exact integers.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.constantFrom(...WHOLE_T),
        startArb,
        traceArb({ maxCost: 12, maxLength: 80 }),
        (limit, T, start, trace) => {
          const clock = new ManualClock(start);
          const g = createLimiter({ algorithm: "gcra", limit, periodMs: limit * T }, clock);
          const b = createLimiter({ algorithm: "token-bucket", capacity: limit, refillPerSecond: 1000 / T }, clock);
          for (const { gap, cost } of trace) {
            clock.advance(gap);
            expect(g.peek("k", cost)).toEqual(b.peek("k", cost));
            expect(g.tryAcquire("k", cost)).toEqual(b.tryAcquire("k", cost));
          }
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it("composites: all members read one now, pass only together, never consume on denial (vs the reference model)", () => {
    // The expected decisions come from test/support/oracle.ts, which shares no code with src/
    // (not from the members' own steps, which would make the implementation its own oracle).
    const seen = new Counted();
    fc.assert(
      fc.property(
        fc.array(specArb(true), { minLength: 2, maxLength: 3 }),
        startArb,
        traceArb({ keys: 2, maxCost: 5 }),
        (specs, start, trace) => {
          const clock = new ManualClock(start);
          const limiter = createLimiter(specs, clock);
          const models = new Map<string, RuleOracle>();
          for (const { gap, key, cost } of trace) {
            clock.advance(gap);
            const now = clock.now();
            const model = models.get(key) ?? new RuleOracle(specs);
            models.set(key, model);
            expect(limiter.peek(key, cost)).toEqual(model.peek(now, cost));
            const want = model.check(now, cost);
            expect(limiter.tryAcquire(key, cost)).toEqual(want);
            seen.hit(want.allowed ? "allowed" : "denied");
            if (!want.allowed && want.parts?.some((p) => p.allowed)) seen.hit("denied with a member that allowed");
          }
        },
      ),
      { numRuns: runs(300) },
    );
    seen.expectAtLeast({ allowed: 600, denied: 600, "denied with a member that allowed": 500 });
  });

  it("the MemoryStore dropping fresh state never changes a decision (vs a table that never forgets)", () => {
    fc.assert(
      fc.property(specArb(false), startArb, traceArb({ keys: 4, maxCost: 4, maxLength: 120 }), (spec, start, trace) => {
        const clock = new ManualClock(start);
        const limiter = createLimiter(spec as AlgorithmSpec, clock);
        const step = algorithmFor(spec);
        const never = new Map<string, unknown>();
        for (const { gap, key, cost } of trace) {
          clock.advance(gap);
          const state = never.get(key) ?? step.create();
          never.set(key, state);
          expect(limiter.tryAcquire(key, cost)).toEqual(step.step(state, clock.now(), cost, true));
        }
      }),
      { numRuns: runs(400) },
    );
  });
});

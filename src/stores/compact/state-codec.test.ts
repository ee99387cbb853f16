// The compact tier's codec for logs (issue 34, cause 2): a bare sliding log or concurrency spec
// of more than two entries is kept as a bound of its own log (the newest entry exactly, the
// oldest at the whole ms before it, the rest at the newest). Tables at fixed instants, and a seeded property: the decoded
// log never admits where the log itself refuses, at any later instant, cost or lowered/raised
// limit (compared until the first request the bound refuses and the log admits: from there the
// two hold different requests).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SEED } from "../../../test/support/seed.ts";
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { GRID_SHIFT } from "./log-bound.ts";
import { compactable, decodeRecord, encodeRecord } from "./state-codec.ts";

const T0 = Date.UTC(2026, 11, 7);
const rule = (...specs: unknown[]): CompiledRule => compileRule(specs.map((s) => validateSpec(s) as AlgorithmSpec));
const log = (...buf: number[]): SlidingLogState => ({ buf: [...buf], head: 0, n: buf.length });
const words = new Float64Array(2);
const roundTrip = (r: CompiledRule, record: SlidingLogState) =>
  encodeRecord(r, record, words, 0) ? (decodeRecord(r, words, 0) as SlidingLogState) : undefined;

describe("a bare log in two words", () => {
  const SL = rule({ algorithm: "sliding-log", limit: 10, windowMs: 60_000 });

  it("two entries or fewer: exact", () => {
    expect(compactable(SL)).toBe(true);
    expect(roundTrip(SL, log())).toEqual(log());
    expect(roundTrip(SL, log(T0))).toEqual(log(T0));
    expect(roundTrip(SL, log(T0, T0 + 0.5))).toEqual(log(T0, T0 + 0.5));
  });

  it.each([
    ["three entries", log(T0, T0 + 1, T0 + 2), log(T0 + GRID_SHIFT, T0 + 2, T0 + 2)],
    ["ten at one instant", log(...new Array<number>(10).fill(T0)), log(...new Array<number>(10).fill(T0))],
    // Older entries on a grid of power-of-two ms, its points GRID_SHIFT past whole multiples
    // (log-bound.ts; here 128 ms, T0 a multiple): one in the newest's own cell reads as the
    // newest, one in an older cell at its point.
    ["fractional: all in the newest's cell", log(T0 + 0.25, T0 + 3, T0 + 7.5), log(T0 + 7.5, T0 + 7.5, T0 + 7.5)],
    ["a ring buffer read from its head", { buf: [T0 + 5, T0 + 9, T0 + 1], head: 2, n: 3 }, log(T0 + 9, T0 + 9, T0 + 9)],
    ["entries a window before the newest: left out (they never count again)", log(0, 1, 2 ** 32 + 5), log(2 ** 32 + 5)],
    [
      "an older cell: at its point",
      log(T0 - 200, T0 - 100, T0 + 2),
      log(T0 - 128 + GRID_SHIFT, T0 + GRID_SHIFT, T0 + 2),
    ],
  ])("%s: the newest exactly, the others at or after their instant", (_name, record, want) => {
    expect(roundTrip(SL, record)).toEqual(want);
  });

  it.each([
    ["a newest entry before 0", log(-5, -2, -1)],
    ["2^20 + 1 entries", { buf: new Array<number>(2 ** 20 + 1).fill(T0), head: 0, n: 2 ** 20 + 1 }],
  ])("%s: does not fit (the store summarises it instead)", (_name, record) => {
    expect(encodeRecord(SL, record, words, 0)).toBe(false);
  });

  it("concurrency leases alike; inside a composite a log keeps one exact entry at most", () => {
    const leases = rule({ algorithm: "concurrency", limit: 5, leaseMs: 30_000 });
    expect(roundTrip(leases, log(T0, T0 + 10, T0 + 20))).toEqual(log(T0 + GRID_SHIFT, T0 + 20, T0 + 20));
    const pair = rule(
      { algorithm: "sliding-log", limit: 5, windowMs: 1000 },
      { algorithm: "sliding-log", limit: 20, windowMs: 60_000 },
    );
    expect(encodeRecord(pair, [log(T0), log(T0)], words, 0)).toBe(true);
    expect(encodeRecord(pair, [log(T0, T0), log(T0)], words, 0)).toBe(false);
  });
});

describe(`a log's bound admits nothing its log refuses (seed ${SEED})`, () => {
  it("at any later instant, any cost, under the rule's limit and a lowered or raised one", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("sliding-log", "concurrency"),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.double({ min: 0, max: 5000, noNaN: true }), { minLength: 3, maxLength: 20 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 20_000, noNaN: true }), fc.integer({ min: 1, max: 5 })), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.integer({ min: 1, max: 30 }),
        (kind, limit, gaps, asks, otherLimit) => {
          const W = 10_000;
          const spec = (l: number) =>
            kind === "sliding-log"
              ? { algorithm: kind, limit: l, windowMs: W }
              : { algorithm: kind, limit: l, leaseMs: W };
          let t = T0;
          const entries = gaps.map((g) => (t += g));
          const real = log(...entries);
          for (const limits of [limit, otherLimit]) {
            const r = rule(spec(limits));
            expect(encodeRecord(rule(spec(limit)), real, words, 0)).toBe(true);
            const bound = decodeRecord(r, words, 0) as SlidingLogState;
            // Entries a window before the newest never count again: the bound leaves them out.
            expect(bound.n).toBe(real.buf.filter((e) => e > t - W).length);
            const a = structuredClone(real);
            const b = structuredClone(bound);
            let now = t;
            for (const [step, cost] of asks) {
              now += step;
              const exact = decideRule(r, a, now, cost, "check");
              const kept = decideRule(r, b, now, cost, "check");
              if (kept.allowed) expect(exact.allowed).toBe(true);
              if (exact.allowed && !kept.allowed) break;
              expect(kept.remaining).toBeLessThanOrEqual(exact.remaining);
            }
          }
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});

// The packed word of a composite (issue 34): whatever state a run of checks leaves, the word read
// back admits no more than the state itself, at every later instant and cost, within the frame
// it was written in and after the frame moves; window counts come back exactly; a ban is packed
// only while it is a fresh key's. Seeded (SLUICE_SEED), printed on failure by fast-check.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { specArb } from "../../../test/properties/arbitraries.ts";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule, createRecord } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { decodePacked, encodePacked, frameCode, frameOf, newFrame, packedRule } from "./packed-codec.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const T0 = Date.UTC(2026, 11, 7, 9, 0, 0, 123);
const rule = (specs: unknown[], ban?: { after: number; withinMs: number; forMs: number }): CompiledRule =>
  compileRule(
    specs.map((s) => validateSpec(s) as AlgorithmSpec),
    ban,
  );

describe("a composite in one packed word", () => {
  it("reads back a state that admits no more, at every later instant and cost (frames at and past the write)", () => {
    let compared = 0;
    fc.assert(
      fc.property(
        fc.array(specArb(true), { minLength: 2, maxLength: 4 }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 700 }), cost: fc.integer({ min: 1, max: 3 }) }), {
          maxLength: 12,
        }),
        fc.integer({ min: 0, max: 3 }),
        (specs, steps, lag) => {
          const r = compileRule(specs);
          expect(packedRule(r)).toBe(!specs.some((s) => s.algorithm === "fixed-window" && s.anchor === "first"));
          if (!packedRule(r)) return;
          const record = createRecord(r);
          let t = T0;
          for (const step of steps) {
            t += step.gap;
            decideRule(r, record, t, step.cost, "check");
          }
          // The frame as a table would hold it: set at a write `lag` horizons ago, or now.
          const frame = newFrame(t - lag * r.horizonMs, r.horizonMs);
          const word = encodePacked(r, record, frame);
          if (word === undefined) return;
          expect(Number.isSafeInteger(word) && word >= 0).toBe(true);
          const back = decodePacked(r, word, frameOf(frameCode(frame)));
          for (const later of [0, 1, 7, 100, r.horizonMs / 2, r.horizonMs]) {
            for (const cost of [1, 2, 3]) {
              const got = decideRule(r, structuredClone(back), t + later, cost, "peek");
              const want = decideRule(r, structuredClone(record), t + later, cost, "peek");
              if (got.allowed) expect(want.allowed, `at +${later}, cost ${cost}`).toBe(true);
              // (An admission reports what is left after it, a refusal what is left now: compare like with like.)
              if (got.allowed === want.allowed) expect(got.remaining).toBeLessThanOrEqual(want.remaining);
              compared++;
            }
          }
        },
      ),
      { numRuns: 400, seed: SEED },
    );
    expect(compared).toBeGreaterThan(1000);
  });

  it("window counts exactly; a ban only while fresh; what does not fit is not written", () => {
    const H = 3_600_000;
    const fwGcra = rule([
      { algorithm: "fixed-window", limit: 10, windowMs: H },
      { algorithm: "gcra", limit: 20, periodMs: H },
    ]);
    const t = T0;
    const record = createRecord(fwGcra);
    for (let i = 0; i < 5; i++) decideRule(fwGcra, record, t, 1, "check");
    const frame = newFrame(t, fwGcra.horizonMs);
    const back = decodePacked(fwGcra, encodePacked(fwGcra, record, frame) as number, frame) as unknown[];
    expect(back[0]).toEqual((record as unknown[])[0]);
    // A 1 h composite's frame spans 2^26 ms: its gcra instant keeps whole ms (exact here).
    expect(back[1]).toEqual((record as unknown[])[1]);
    // Four members: 13 bits each; a count past a member's share does not fit.
    const four = rule([
      { algorithm: "fixed-window", limit: 1000, windowMs: 1000 },
      { algorithm: "sliding-window", limit: 1000, windowMs: 1000 },
      { algorithm: "token-bucket", capacity: 10, refillPerSecond: 1 },
      { algorithm: "gcra", limit: 10, periodMs: 10_000 },
    ]);
    const busy = createRecord(four);
    for (let i = 0; i < 8; i++) decideRule(four, busy, t, 1, "check");
    expect(encodePacked(four, busy, newFrame(t, four.horizonMs))).toBeUndefined();
    // A ban: packed while fresh; not once a denial counted a strike.
    const banned = rule([{ algorithm: "fixed-window", limit: 1, windowMs: 1000 }], {
      after: 3,
      withinMs: 1000,
      forMs: 1000,
    });
    const b = createRecord(banned);
    decideRule(banned, b, t, 1, "check");
    const bFrame = newFrame(t, banned.horizonMs);
    expect(decodePacked(banned, encodePacked(banned, b, bFrame) as number, bFrame)).toEqual(b);
    decideRule(banned, b, t, 1, "check"); // refused: a strike
    expect(encodePacked(banned, b, bFrame)).toBeUndefined();
  });
});

describe("which composites pack", () => {
  const rule = (specs: unknown[]) => compileRule(specs.map((s) => validateSpec(s) as AlgorithmSpec));
  const lease = { algorithm: "concurrency", limit: 3, leaseMs: 7 };
  const fw = { algorithm: "fixed-window", limit: 10, windowMs: 1000 };
  const sw = { algorithm: "sliding-window", limit: 10, windowMs: 2000 };
  it("a lease packs beside one member, not among three or four (its instants would round by more than a ms)", () => {
    expect(packedRule(rule([fw, lease]))).toBe(true);
    expect(packedRule(rule([fw, sw, lease]))).toBe(false);
    expect(packedRule(rule([fw, sw, fw, lease]))).toBe(false);
    expect(packedRule(rule([fw, sw, fw]))).toBe(true);
  });
});

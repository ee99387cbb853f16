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
          const back = decodePacked(r, word, frameOf(frameCode(frame) as number));
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

describe("a member's field stays within its share", () => {
  it("an empty fixed window far shorter than the frame is not written over the log beside it", () => {
    // Four members, 13 bits each; a 60 s gcra sizes the frame (2^20 ms), so the 1 ms window's
    // number takes 21 bits. With its count 0 it used to be written whole, its high bits (7 here)
    // added to the log's field: the log's 10 entries read back as 1 (an escape).
    const four = rule([
      { algorithm: "fixed-window", limit: 10, windowMs: 1 },
      { algorithm: "sliding-log", limit: 20, windowMs: 1000 },
      { algorithm: "gcra", limit: 1000, periodMs: 60_000 },
      { algorithm: "gcra", limit: 100, periodMs: 1000 },
    ]);
    const record = createRecord(four);
    const t = T0 + 7;
    for (let i = 0; i < 10; i++) decideRule(four, record, t, 1, "check");
    decideRule(four, record, t + 3, 1, "check");
    decideRule(four, record, t + 3, 1, "refund", t + 3); // the 1 ms window's count back to 0
    const frame = newFrame(t + 3, four.horizonMs);
    const word = encodePacked(four, record, frame);
    if (word !== undefined) {
      const log = (decodePacked(four, word, frame) as unknown[])[1] as { buf: number[]; n: number };
      expect(log.n).toBeGreaterThanOrEqual(10);
    }
  });
});

describe("a sliding log in a packed word (issue 34: the grid layout)", () => {
  const pair = rule([
    { algorithm: "fixed-window", limit: 100, windowMs: 1000 },
    { algorithm: "sliding-log", limit: 8, windowMs: 3000 },
  ]);
  it("a row of an older build (a whole frame code) reads back in the old layout: its count at the newest", () => {
    // Written by the layout before the grid (minute windows: a frame of 2^20 ms): the log's 26
    // bits as offset · 2^8 + count, the offset in units of 2^20 / 2^18 = 4 ms, here past half
    // the frame (its top bit set, which the new layout reads as a grid field); the fixed
    // window's count · 2^5 + its window's number.
    const minute = rule([
      { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
      { algorithm: "sliding-log", limit: 8, windowMs: 60_000 },
    ]);
    const frame = newFrame(T0 - 123, 60_000);
    expect(frame.range).toBe(2 ** 20);
    const newest = frame.base + 600_000;
    const w = Math.floor(newest / 60_000) * 60_000;
    const logField = (600_000 / 4) * 2 ** 8 + 3;
    expect(logField).toBeGreaterThanOrEqual(2 ** 25);
    const fwField = 3 * 2 ** 5 + (w / 60_000 - Math.floor(frame.base / 60_000));
    const code = frame.base * 64 + 20;
    expect(frameOf(code).legacy).toBe(true);
    const back = decodePacked(minute, logField * 2 ** 26 + fwField, frameOf(code)) as unknown[];
    expect(back[0]).toEqual({ w, c: 3 });
    expect(back[1]).toEqual({ buf: [newest, newest, newest], head: 0, n: 3 });
  });
  it("a new row's frame code says so, and its log reads back on the grid: the newest later, the others at or after themselves", () => {
    const t = T0 - 123;
    const record = createRecord(pair);
    for (const dt of [0, 500, 1000]) decideRule(pair, record, t + dt, 1, "check");
    const frame = newFrame(t + 1000, pair.horizonMs);
    const code = frameCode(frame) as number;
    expect(frameOf(code)).toEqual(frame);
    const log = (decodePacked(pair, encodePacked(pair, record, frame) as number, frameOf(code)) as unknown[])[1] as {
      buf: number[];
      n: number;
    };
    expect(log.n).toBe(3);
    for (const [i, dt] of [0, 500, 1000].entries()) expect(log.buf[i] as number).toBeGreaterThanOrEqual(t + dt);
    // Not all at the newest (the layout that re-dated them at each request).
    expect(log.buf[0] as number).toBeLessThan(log.buf[2] as number);
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

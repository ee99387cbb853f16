// A sliding log (or lease log) of ≥ 2 entries in one word (dense-codec.ts, log-bound.ts): a
// per-key bound that admits nothing its own log refuses, whatever the clock and the limit do
// next, however often it is re-encoded; and one that does not drift: a key steady at a third of
// its limit, its record in the compact tier between visits, is never refused (issue 34: the
// "n entries at the newest" word grew by one per request, 11–38% refused).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule, createRecord, type RuleRecord } from "../../core/rule.ts";
import { mulberry32 } from "../../core/seeded-random.ts";
import { validateSpec } from "../../core/spec.ts";
import { decodeWord, encodeWord } from "./dense-codec.ts";
import { decodeGrid, encodeGrid, isPayload, payloadOf, payloadWord } from "./log-bound.ts";
import { decodeRecord, encodeRecord } from "./state-codec.ts";

const SEED = Number(process.env.LOG_BOUND_SEED ?? 3434);
const T0 = Date.UTC(2026, 11, 7, 12);

const bare = (spec: unknown): CompiledRule => compileRule([validateSpec(spec) as AlgorithmSpec]);

describe(`a log's one-word bound admits no more than the log (seed ${SEED})`, () => {
  it("payload words carry their bits and are told apart from entries and old bounds", () => {
    for (const [hi, lo] of [
      [0, 0],
      [0x1fffffff, 0xffffffff],
      [12345, 0x80000001],
    ] as const) {
      const w = payloadWord(hi, lo);
      expect(isPayload(w)).toBe(true);
      expect(payloadOf(w)).toEqual([hi, lo]);
    }
    expect(isPayload(-3)).toBe(false);
    expect(isPayload(0)).toBe(false);
    expect(isPayload(Number.NaN)).toBe(false);
  });

  it("a grid code reads every entry at or after itself, the newest exactly", () => {
    const log = { buf: [T0 - 2999, T0 - 1500, T0 - 1499, T0 - 3, T0], head: 0, n: 5 };
    const code = encodeGrid(log, T0, 3000, 14, 7, 11);
    expect(code).toBeDefined();
    const back = decodeGrid(code as NonNullable<typeof code>, T0, 14);
    expect(back.n).toBe(5);
    expect(back.buf[4]).toBe(T0);
    for (let i = 0; i < 5; i++) expect(back.buf[i] as number).toBeGreaterThanOrEqual(log.buf[i] as number);
    // The finest grid that fits 14 bits (5 entries, the oldest 6 cells back): 2^9 = 512 ms, so no
    // entry reads 512 ms late or more (2^8: 12 cells back, 17 bits).
    expect(code?.k).toBe(9);
    for (let i = 0; i < 5; i++) expect((back.buf[i] as number) - (log.buf[i] as number)).toBeLessThan(512);
  });

  const two = new Float64Array(2);
  const codecs = {
    "one word": (rule: CompiledRule, record: RuleRecord) => {
      const word = encodeWord(rule, record);
      return word === undefined ? undefined : { bound: word < 0, back: decodeWord(rule, word) };
    },
    "two words": (rule: CompiledRule, record: RuleRecord) =>
      encodeRecord(rule, record, two, 0)
        ? { bound: (two[1] as number) < 0, back: decodeRecord(rule, two, 0) }
        : undefined,
  };
  for (const [codec, roundTrip] of Object.entries(codecs))
    for (const kind of ["sliding-log", "concurrency"] as const) {
      it(`${kind} in ${codec}: random logs, clocks (steps back, fractions), limits and costs, re-encoded at every step`, () => {
        const next = mulberry32(SEED + (kind === "concurrency" ? 1 : 0) + (codec === "one word" ? 0 : 2));
        let bounds = 0;
        for (let run = 0; run < 300; run++) {
          const W = [1, 7, 1000, 3000, 60_000, 3_600_000][Math.floor(next() * 6)] as number;
          const spec = (limit: number) =>
            kind === "sliding-log" ? { algorithm: kind, limit, windowMs: W } : { algorithm: kind, limit, leaseMs: W };
          let limit = 2 + Math.floor(next() * 14);
          let rule = bare(spec(limit));
          // `real`: the log fed only what the bound admitted (the capped store's oracle); `held`: the
          // record as the compact tier holds it, decoded from its word before each step.
          const real = createRecord(rule) as RuleRecord;
          let held = createRecord(rule) as RuleRecord;
          let t = T0 + Math.floor(next() * 10_000);
          for (let step = 0; step < 200; step++) {
            const r = next();
            // A clock that stepped back, one at a fraction of a ms, or a step forward.
            if (r < 0.05) t -= Math.floor(next() * W);
            else if (r < 0.1) t += next() * W;
            else t += Math.floor(next() * next() * 1.5 * W);
            if (next() < 0.03) {
              // updateRule: another limit, the records kept.
              limit = 1 + Math.floor(next() * 20);
              rule = bare(spec(limit));
            }
            const cost = next() < 0.8 ? 1 : 1 + Math.floor(next() * 3);
            const back = roundTrip(rule, held);
            if (back !== undefined) {
              if (back.bound) bounds++;
              held = back.back;
            } else held = structuredClone(held);
            const d = decideRule(rule, held, t, cost, "check");
            if (d.allowed) {
              const e = decideRule(rule, real, t, cost, "check");
              if (!e.allowed) {
                throw new Error(`escape: seed ${SEED} run ${run} step ${step} W ${W} limit ${limit} t ${t - T0}`);
              }
            }
          }
        }
        // The runs did exercise the bound (not only exact words).
        expect(bounds).toBeGreaterThan(5_000);
      });
    }
});

describe("a steady key below its limit does not drift to refusal in the compact tier", () => {
  // maxKeys 10: 30 flood keys a step push the steady key out of the Map tier into the compact
  // tier (as one word) before each of its requests. W = 3 s, limit 9: P ≥ 1000 ms is at most a
  // third of the limit (3 in any window); the log allows all of them.
  // 24-byte slots: a composite of two one-word members (two words) flooded first widens the tier.
  for (const slots of [16, 24])
    for (const P of [1000, 1400, 2000, 2900]) {
      it(`${slots}-byte slots, one request every ${P} ms, 1,000 requests: none refused`, () => {
        const clock = new ManualClock(T0);
        const spec = { algorithm: "sliding-log", limit: 9, windowMs: 3000 } as const;
        const store = new MemoryStore({ maxKeys: 10 });
        if (slots === 24) {
          const wide = createLimiter(
            [
              { algorithm: "gcra", limit: 5, periodMs: 1000 },
              { algorithm: "sliding-log", limit: 5, windowMs: 1000 },
            ],
            { clock, store, name: "wide" },
          );
          for (let k = 0; k < 100; k++) wide.tryAcquire(`wide-${k}`);
        }
        const capped = createLimiter(spec, { clock, store });
        const exact = createLimiter(spec, { clock, store: new MemoryStore() });
        let refused = 0;
        let bound = 0;
        let f = 0;
        for (let i = 0; i < 1000; i++) {
          clock.advance(P);
          for (let k = 0; k < 30; k++) {
            const key = `flood-${f++}`;
            for (let c = 0; c < 3; c++) capped.tryAcquire(key);
          }
          const d = capped.tryAcquire("steady");
          expect(exact.tryAcquire("steady").allowed).toBe(true);
          if (!d.allowed) refused++;
          if (d.approximate) bound++;
        }
        expect(refused).toBe(0);
        // Read back from a bound most of the time (the compact tier held it); two words hold a
        // log of two entries exactly (P ≥ 1500 ms).
        if (slots === 16 || P < 1500) expect(bound).toBeGreaterThan(700);
      });
    }
});

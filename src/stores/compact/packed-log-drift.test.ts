// A sliding log inside a packed composite (packed-codec.ts, issue 34): the log
// member's field admits nothing its own log refuses, however often it is re-encoded, whatever the
// clock, the frame and the limit do; and it does not drift: a key steady below its limit, its
// record in the compact tier between visits, is never refused (the "n entries at the newest"
// field re-dated the older entries at each request: 200 of 1,000 refused at one request a second).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule, createRecord, type RuleRecord } from "../../core/rule.ts";
import { mulberry32 } from "../../core/seeded-random.ts";
import { validateSpec } from "../../core/spec.ts";
import { decodePacked, encodePacked, frameHolds, newFrame, type PackFrame } from "./packed-codec.ts";

const SEED = Number(process.env.PACKED_LOG_SEED ?? 343434);
const T0 = Date.UTC(2026, 11, 7, 12);

const composite = (specs: unknown[]): CompiledRule => compileRule(specs.map((s) => validateSpec(s) as AlgorithmSpec));
/** Members that never refuse here (their counts stay exact), so the log decides. */
const FILLERS = [
  { algorithm: "fixed-window", limit: 1_000_000, windowMs: 1000 },
  { algorithm: "sliding-window", limit: 1_000_000, windowMs: 2000 },
  { algorithm: "fixed-window", limit: 1_000_000, windowMs: 500 },
];

describe(`a log inside a packed composite admits no more than the log (seed ${SEED})`, () => {
  // Leases keep the "n at the newest" field (packed-codec.ts): only sliding logs take the grid.
  for (const members of [2, 3, 4])
    for (const kind of ["sliding-log"] as const) {
      it(`${kind}, ${members} members: random clocks (steps back, fractions), limits and costs, re-encoded at every step`, () => {
        const next = mulberry32(SEED + members);
        let grids = 0;
        for (let run = 0; run < 150; run++) {
          const W = [1, 7, 1000, 3000, 60_000][Math.floor(next() * 5)] as number;
          const logSpec = (limit: number) => ({ algorithm: kind, limit, windowMs: W });
          const specs = (limit: number) => [...FILLERS.slice(0, members - 1), logSpec(limit)];
          let limit = 2 + Math.floor(next() * 10);
          let rule = composite(specs(limit));
          // `real`: the record fed only what the packed one admitted; `held`: decoded from its word.
          const real = createRecord(rule) as RuleRecord;
          let held = createRecord(rule) as RuleRecord;
          let t = T0 + Math.floor(next() * 10_000);
          let frame: PackFrame = newFrame(t, rule.horizonMs);
          for (let step = 0; step < 150; step++) {
            const r = next();
            if (r < 0.05) t -= Math.floor(next() * W);
            else if (r < 0.1) t += next() * W;
            else t += Math.floor(next() * next() * 1.5 * W);
            if (next() < 0.03) {
              // updateRule: another limit, the records kept.
              limit = 1 + Math.floor(next() * 14);
              rule = composite(specs(limit));
            }
            // The table moves its frame (re-encoding every slot) before a write would fall out of it.
            if (!frameHolds(frame, t, rule.horizonMs)) {
              const word = encodePacked(rule, held, frame);
              if (word !== undefined) held = decodePacked(rule, word, frame);
              frame = newFrame(t, rule.horizonMs);
            }
            const word = encodePacked(rule, held, frame);
            if (word !== undefined) {
              const field = Math.floor(word / 2 ** ((members - 1) * Math.floor(52 / members)));
              if (field >= 2 ** (Math.floor(52 / members) - 1)) grids++;
              held = decodePacked(rule, word, frame);
            } else held = structuredClone(held);
            const cost = next() < 0.8 ? 1 : 1 + Math.floor(next() * 3);
            const d = decideRule(rule, held, t, cost, "check");
            if (d.allowed && !decideRule(rule, real, t, cost, "check").allowed) {
              throw new Error(`escape: seed ${SEED} members ${members} run ${run} step ${step} W ${W} t ${t - T0}`);
            }
          }
        }
        // The runs did exercise the grid layout.
        expect(grids).toBeGreaterThan(3_000);
      });
    }
});

describe("a steady key below its limit does not drift to refusal inside a packed composite", () => {
  // maxKeys 10: 30 flood keys of 3 requests a step push the steady key out of the Map tier into
  // the compact tier before each of its requests (drift2.mjs). Log: 8 per 3 s; P ≥ 500 ms sends
  // at most 6 in any window, which the exact log allows.
  const cases: [number, number[]][] = [
    [2, [500, 1000, 1400, 2000, 2900]],
    [3, [1000, 2900]],
    [4, [2900]],
  ];
  for (const [members, periods] of cases)
    for (const P of periods) {
      it(`${members} members, one request every ${P} ms, 1,000 requests: none refused`, () => {
        const clock = new ManualClock(T0);
        const specs = [
          ...[{ algorithm: "fixed-window", limit: 100, windowMs: 1000 }, ...FILLERS.slice(1)].slice(0, members - 1),
          { algorithm: "sliding-log", limit: 8, windowMs: 3000 },
        ] as AlgorithmSpec[];
        const capped = createLimiter(specs, { clock, store: new MemoryStore({ maxKeys: 10 }) });
        const exact = createLimiter(specs, { clock, store: new MemoryStore() });
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
        // Read back from the compact tier's bound nearly every time.
        expect(bound).toBeGreaterThan(700);
      });
    }
});

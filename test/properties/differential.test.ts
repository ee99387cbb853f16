// The differential fuzzer of docs/semantics.md §10: random traces of checks (cost 1–3), peeks,
// refunds with and without receipts, resets, `updateRule` up and down and floods of new keys, for every algorithm,
// composites and bans, through a capped store (1–6 keys, tiny budgets: collisions everywhere)
// in lockstep with an uncapped store that replays what the capped store admitted (and, under a
// ban, what it refused: a strike on both). Every
// check (and peek) the capped store admits, the uncapped store must admit too: a cap may
// over-count a key, never let it pass its limit. `npm run fuzz` runs it long (FUZZ_RUNS).
import fc from "fast-check";
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { specArb, startArb, withLimit } from "./arbitraries.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 14_0014);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

type Op =
  | { op: "check" | "peek" | "refund"; gap: number; key: number; cost: number }
  | { op: "receipt"; gap: number; key: number; pick: number }
  | { op: "reset"; key: number }
  | { op: "update"; limit: number }
  | { op: "flood"; n: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      op: fc.constant("check" as const),
      gap: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3000 })),
      key: fc.integer({ min: 0, max: 3 }),
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom("peek" as const, "refund" as const),
      gap: fc.integer({ min: 0, max: 200 }),
      key: fc.integer({ min: 0, max: 3 }),
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("receipt" as const),
      gap: fc.integer({ min: 0, max: 1500 }),
      key: fc.integer({ min: 0, max: 3 }),
      pick: fc.integer({ min: 0, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reset" as const), key: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("update" as const), limit: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("flood" as const), n: fc.integer({ min: 1, max: 12 }) }) },
);

const banArb = fc.option(
  fc.record({
    after: fc.integer({ min: 1, max: 3 }),
    withinMs: fc.integer({ min: 50, max: 5000 }),
    forMs: fc.integer({ min: 50, max: 10_000 }),
  }),
  { nil: undefined },
);

const ruleArb = fc.oneof(
  specArb(true).map((s) => [s] as AlgorithmSpec[]),
  fc.tuple(specArb(true), specArb(true)).map(([a, b]) => [a, b] as AlgorithmSpec[]),
);

describe("differential fuzzer: a capped store never admits what an uncapped store refuses", () => {
  it(`random traces with refunds, resets, limit changes, composites and bans (${RUNS} runs, seed ${SEED})`, () => {
    let admitted = 0;
    let approximate = 0;
    let refunds = 0;
    let strikes = 0;
    fc.assert(
      fc.property(
        ruleArb,
        banArb,
        startArb,
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(250, 600, 2000, 20_000),
        fc.constantFrom(1, 2, 4),
        fc.array(opArb, { minLength: 20, maxLength: 80, size: "max" }),
        (specs, ban, start, maxKeys, maxBytes, sketchWidth, ops) => {
          const a = new ManualClock(start);
          const b = new ManualClock(start);
          const cappedStore = new MemoryStore({ maxKeys, maxBytes, sketchWidth, seed: 3 });
          const capped = new RateLimiterService({ clock: a, store: cappedStore });
          const free = new RateLimiterService({ clock: b, store: new MemoryStore() });
          const options = ban === undefined ? undefined : { ban };
          capped.addRule("r", specs, options);
          free.addRule("r", specs, options);
          let flood = 0;
          const diverged = new Set<string>();
          const receipts = new Map<string, Array<{ at: number; cost: number }>>();
          ops.forEach((o, i) => {
            const where = `step ${i} ${JSON.stringify(o)}`;
            switch (o.op) {
              case "check":
              case "peek":
              case "refund": {
                a.advance(o.gap);
                b.advance(o.gap);
                const key = `k${o.key}`;
                if (o.op === "refund") {
                  capped.refund("r", key, { cost: o.cost });
                  free.refund("r", key, { cost: o.cost });
                  return;
                }
                const d = (o.op === "check" ? capped.check : capped.peek).call(capped, "r", key, {
                  cost: o.cost,
                }) as Decision;
                if (d.approximate) approximate++;
                if (!d.allowed) {
                  // Under a ban a refusal is a strike: the uncapped store takes it too. One it
                  // admits instead leaves it holding more units than the capped store: the key
                  // is no longer compared, until a reset.
                  if (ban !== undefined && o.op === "check") {
                    if ((free.check("r", key, { cost: o.cost }) as Decision).allowed) diverged.add(key);
                    else strikes++;
                  }
                  return;
                }
                const u = (o.op === "check" ? free.check : free.peek).call(free, "r", key, {
                  cost: o.cost,
                }) as Decision;
                if (!diverged.has(key)) expect(u.allowed, where).toBe(true);
                if (o.op === "check") {
                  admitted++;
                  const list = receipts.get(key) ?? [];
                  list.push({ at: d.at as number, cost: o.cost });
                  receipts.set(key, list);
                }
                return;
              }
              case "receipt": {
                // A refund naming one of the key's earlier admitted checks (late or not).
                a.advance(o.gap);
                b.advance(o.gap);
                const list = receipts.get(`k${o.key}`) ?? [];
                const r = list[list.length - 1 - o.pick];
                if (r === undefined) return;
                capped.refund("r", `k${o.key}`, r);
                free.refund("r", `k${o.key}`, r);
                refunds++;
                return;
              }
              case "reset":
                capped.reset("r", `k${o.key}`);
                free.reset("r", `k${o.key}`);
                diverged.delete(`k${o.key}`);
                return;
              case "update":
                capped.updateRule("r", withLimit(specs, o.limit), options);
                free.updateRule("r", withLimit(specs, o.limit), options);
                return;
              case "flood":
                for (let f = 0; f < o.n; f++) capped.check("r", `flood${flood++}`);
                expect(cappedStore.size).toBeLessThanOrEqual(maxKeys);
            }
          });
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
    console.log(
      `differential: ${admitted} admissions checked, ${approximate} approximate decisions, ${refunds} receipts, ${strikes} refusals struck on both stores (seed ${SEED})`,
    );
    // The property ran on admissions and on summarised keys, not only on its loops.
    expect(admitted).toBeGreaterThan(RUNS * 5);
    expect(approximate).toBeGreaterThan(RUNS / 5);
    expect(refunds).toBeGreaterThan(RUNS / 2);
    expect(strikes).toBeGreaterThan(RUNS);
  });
});

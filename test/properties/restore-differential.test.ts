// A restart in the middle of a trace (issue 34, "Restore is exact"): the same random trace runs
// through three stores in lockstep: a capped store snapshotted and restored into a new store
// of the same options at a random step (`sluice serve --state` across a restart), the same
// capped store without the restart, and an uncapped store that replays what the restarted
// store admitted (and, under a ban, strikes what it refused: differential.test.ts's harness).
// Every algorithm, composites, bans, refunds (with and without receipts), resets, penalties,
// limit changes and floods past `maxKeys`, with budgets from no compact tier at all to room to
// spare. Both directions:
// - no escape: every check or peek the restarted store admits, the uncapped store admits too;
// - nothing lost: every decision the restarted store makes from exact state equals the one the
//   store makes without the restart; a decision from a summary (`approximate`) may differ only
//   towards refusing (it was summarised on one side only: over-counted, never under).
// Seeded (SLUICE_SEED), the seed printed; `npm run fuzz` runs it long (FUZZ_RUNS).
import fc from "fast-check";
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { specArb, startArb, withLimit } from "./arbitraries.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34_0034);
const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

type Op =
  | { op: "check" | "peek" | "refund" | "penalty"; gap: number; key: number; cost: number }
  | { op: "receipt"; gap: number; key: number; pick: number }
  | { op: "reset"; key: number }
  | { op: "update"; limit: number }
  | { op: "flood"; n: number; again: boolean };

const KEYS = 6;
const key = fc.integer({ min: 0, max: KEYS - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      op: fc.constant("check" as const),
      gap: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3000 })),
      key,
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom("peek" as const, "refund" as const, "penalty" as const),
      gap: fc.integer({ min: 0, max: 200 }),
      key,
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("receipt" as const),
      gap: fc.integer({ min: 0, max: 1500 }),
      key,
      pick: fc.integer({ min: 0, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reset" as const), key }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("update" as const), limit: fc.integer({ min: 1, max: 8 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("flood" as const),
      n: fc.integer({ min: 1, max: 120 }),
      again: fc.boolean(),
    }),
  },
);

const banArb = fc.option(
  fc.record({
    after: fc.integer({ min: 1, max: 3 }),
    withinMs: fc.integer({ min: 50, max: 5000 }),
    forMs: fc.integer({ min: 50, max: 10_000 }),
  }),
  { nil: undefined, freq: 1 }, // half the rules without a ban: those have a compact tier
);

const ruleArb = fc.oneof(
  { weight: 3, arbitrary: specArb(true).map((s) => [s] as AlgorithmSpec[]) },
  { weight: 1, arbitrary: fc.tuple(specArb(true), specArb(true)).map(([a, b]) => [a, b] as AlgorithmSpec[]) },
);

/** Whether a decision (or one of its parts) was made from a summary. */
function approximate(d: Decision): boolean {
  return d.approximate === true || (d.parts ?? []).some((p) => p.approximate === true);
}

describe("restart in the middle of a trace: restored decisions are the unrestarted store's, and never an escape", () => {
  it(`random traces past maxKeys, every algorithm, composites, bans (${RUNS} runs, seed ${SEED})`, () => {
    let compared = 0;
    let exactAfter = 0;
    let approximateAfter = 0;
    let admitted = 0;
    let compactRestored = 0;
    let restoredExactly = 0;
    let refusedMore = 0;
    let admittedMore = 0;
    fc.assert(
      fc.property(
        ruleArb,
        banArb,
        startArb,
        fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 20, max: 60 })),
        fc.constantFrom(250, 2000, 20_000, 200_000),
        fc.constantFrom(1, 4, 64),
        fc.array(opArb, { minLength: 20, maxLength: 80, size: "max" }),
        fc.integer({ min: 25, max: 99 }),
        (specs, ban, start, maxKeys, maxBytes, sketchWidth, ops, where) => {
          const options = { maxKeys, maxBytes, sketchWidth, seed: 3 };
          const a = new ManualClock(start);
          const b = new ManualClock(start);
          const c = new ManualClock(start);
          const ruleOptions = ban === undefined ? undefined : { ban };
          let current = specs; // the rule as last updated: what the restarted process is configured with
          const service = (clock: ManualClock, store: MemoryStore) => {
            const s = new RateLimiterService({ clock, store });
            s.addRule("r", current, ruleOptions);
            return s;
          };
          let restartedStore = new MemoryStore(options);
          let restarted = service(a, restartedStore);
          const keptStore = new MemoryStore(options);
          const kept = service(b, keptStore);
          const free = service(c, new MemoryStore());
          const restartAt = Math.floor((where / 100) * ops.length); // past a quarter: some state to carry
          let after = false;
          let flood = 0;
          const diverged = new Set<string>();
          // Keys whose histories forked after the restart: one store admitted a check from a summary
          // (or a bound) that the other refused, so their exact states differ from then on, both
          // rightly (each store's own trace; the uncapped store still checks every admission).
          const forked = new Set<string>();
          const receipts = new Map<string, Array<{ at: number; cost: number }>>();
          const advance = (ms: number) => {
            a.advance(ms);
            b.advance(ms);
            c.advance(ms);
          };
          /** The restarted store's decision beside the unrestarted one's: equal from exact state. */
          const compare = (got: Decision, want: Decision, step: string, k: string, op: string) => {
            if (!after) return;
            compared++;
            if (!got.allowed && want.allowed) refusedMore++;
            if (got.allowed && !want.allowed) admittedMore++;
            if (approximate(got) || approximate(want)) {
              approximateAfter++;
              if (op === "check" && got.allowed !== want.allowed) forked.add(k);
              // Summarised on one side only: that side may refuse more, never admit more.
              if (approximate(got) && !approximate(want) && got.allowed) {
                expect(want.allowed, `${step}: admitted from a summary what the store refused`).toBe(true);
              }
              return;
            }
            if (forked.has(k)) return;
            exactAfter++;
            expect(got, `${step}: differs from the store that was not restarted`).toEqual(want);
          };
          ops.forEach((o, i) => {
            if (i === restartAt) {
              const text = restartedStore.snapshot(a.now());
              restartedStore = new MemoryStore(options);
              restartedStore.restore(text);
              restarted = service(a, restartedStore);
              const report = restartedStore.restored();
              expect(report.dropped, JSON.stringify(report)).toBe(0);
              expect(report.summarised, JSON.stringify(report)).toBe(0);
              restoredExactly += report.exact;
              compactRestored += restartedStore.stats().compactKeys;
              after = true;
            }
            const step = `step ${i} ${JSON.stringify(o)} (restart at ${restartAt})`;
            switch (o.op) {
              case "check":
              case "peek": {
                advance(o.gap);
                const k = `k${o.key}`;
                const d = restarted[o.op]("r", k, { cost: o.cost }) as Decision;
                compare(d, kept[o.op]("r", k, { cost: o.cost }) as Decision, step, k, o.op);
                if (!d.allowed) {
                  if (ban !== undefined && o.op === "check") {
                    if ((free.check("r", k, { cost: o.cost }) as Decision).allowed) diverged.add(k);
                  }
                  return;
                }
                const u = free[o.op]("r", k, { cost: o.cost }) as Decision;
                if (!diverged.has(k)) expect(u.allowed, `${step}: an escape`).toBe(true);
                if (o.op === "check") {
                  admitted++;
                  const list = receipts.get(k) ?? [];
                  list.push({ at: d.at as number, cost: o.cost });
                  receipts.set(k, list);
                }
                return;
              }
              case "refund":
              case "penalty": {
                advance(o.gap);
                const k = `k${o.key}`;
                for (const s of [restarted, kept, free]) s[o.op]("r", k, { cost: o.cost });
                return;
              }
              case "receipt": {
                advance(o.gap);
                const k = `k${o.key}`;
                const r = (receipts.get(k) ?? [])[(receipts.get(k)?.length ?? 0) - 1 - o.pick];
                if (r === undefined) return;
                for (const s of [restarted, kept, free]) s.refund("r", k, r);
                return;
              }
              case "reset":
                for (const s of [restarted, kept, free]) s.reset("r", `k${o.key}`);
                diverged.delete(`k${o.key}`);
                forked.delete(`k${o.key}`);
                return;
              case "update":
                current = withLimit(specs, o.limit);
                for (const s of [restarted, kept, free]) s.updateRule("r", current, ruleOptions);
                return;
              case "flood": {
                // New keys, or the last flood's keys again (they come back: the protected segment).
                const first = o.again ? Math.max(0, flood - o.n) : flood;
                for (let f = first; f < first + o.n; f++) {
                  const fk = `flood${f}`;
                  const d = restarted.check("r", fk) as Decision;
                  compare(d, kept.check("r", fk) as Decision, `${step} ${fk}`, fk, "check");
                  if (d.allowed && !diverged.has(fk)) {
                    expect((free.check("r", fk) as Decision).allowed, `${step} ${fk}: an escape`).toBe(true);
                  } else if (!d.allowed && ban !== undefined && (free.check("r", fk) as Decision).allowed) {
                    diverged.add(fk);
                  }
                }
                flood = Math.max(flood, first + o.n);
                expect(restartedStore.size).toBeLessThanOrEqual(maxKeys);
              }
            }
          });
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
    console.log(
      `restore differential: ${compared} decisions after a restart compared (${exactAfter} exact and equal, ${approximateAfter} from a summary; the restarted store refused ${refusedMore} that the store without a restart admitted, and admitted ${admittedMore} it refused, none past the uncapped store), ${admitted} admissions checked against the uncapped store, ${restoredExactly} records restored exactly, ${compactRestored} of them back into the compact tier (seed ${SEED})`,
    );
    // The restart itself refuses no honest request (issue 34: 62-100% were); summaries shared by
    // a handful of keys in these tiny stores may fill in another order after it (either way).
    expect(refusedMore).toBeLessThanOrEqual(compared / 100);
    expect(exactAfter).toBeGreaterThan(RUNS * 10);
    expect(approximateAfter).toBeGreaterThan(RUNS / 5);
    expect(restoredExactly).toBeGreaterThan(RUNS * 2);
    expect(compactRestored).toBeGreaterThan(RUNS / 2);
  });
});

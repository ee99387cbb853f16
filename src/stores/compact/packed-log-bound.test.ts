// A sliding log in the compact tier as a bound (issue 34): inside a packed composite
// (packed-codec.ts's grid layout) and bare (dense-codec.ts's one word, state-codec.ts's two), the
// record as the compact tier holds it, re-encoded before every step, admits nothing its own log
// would refuse, over random traces: windows of 1–5 ms and longer, costs above 1, refunds (of
// checks both admitted, each once, with its receipt; or at once without one), clocks that step
// back or land on fractions of a ms, frames that move, 2-word rows read back as a restore reads
// them, bans, 1–4 members, busy and quiet keys. Seeded (PACKED_LOG_SEED, printed in the test
// name and in every failure).
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule, createRecord, type RuleRecord } from "../../core/rule.ts";
import { mulberry32 } from "../../core/seeded-random.ts";
import { validateSpec } from "../../core/spec.ts";
import { readState, writeState, writtenExactly } from "./dense-codec.ts";
import { frameHolds, newFrame, type PackFrame, packedRule } from "./packed-codec.ts";

const SEED = Number(process.env.PACKED_LOG_SEED ?? 343434);
const T0 = Date.UTC(2026, 11, 7, 12);

/** A random composite with a sliding log among its members (or a log and a ban, or a bare log). */
function randomRule(next: () => number): CompiledRule {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const W = () => pick([1, 2, 3, 4, 5, 5, 7, 16, 1000, 3000, 60_000]);
  const log = () => ({
    algorithm: "sliding-log",
    limit: 1 + Math.floor(next() * (next() < 0.3 ? 40 : 10)),
    windowMs: W(),
  });
  // A bare log, up to 60 entries: one word (its unary or per-cell counts code) or two.
  if (next() < 0.2)
    return compileRule([validateSpec({ ...log(), limit: 1 + Math.floor(next() * 60) }) as AlgorithmSpec]);
  const others = [
    () => ({ algorithm: "fixed-window", limit: 1 + Math.floor(next() * 20), windowMs: W() }),
    () => ({ algorithm: "sliding-window", limit: 1 + Math.floor(next() * 20), windowMs: W() }),
    () => ({ algorithm: "gcra", limit: 1 + Math.floor(next() * 10), periodMs: W() }),
    () => ({ algorithm: "token-bucket", capacity: 1 + Math.floor(next() * 10), refillPerSecond: 1 + next() * 50 }),
    log,
  ];
  const r = next();
  const specs: unknown[] = [log()];
  if (r < 0.25) {
    const ban = { after: 1 + Math.floor(next() * 3), withinMs: 20 + Math.floor(next() * 3000), forMs: 20 };
    return compileRule([validateSpec(specs[0]) as AlgorithmSpec], ban);
  }
  const extra = r < 0.7 ? 1 : r < 0.85 ? 2 : 3;
  for (let i = 0; i < extra; i++) specs.splice(Math.floor(next() * (specs.length + 1)), 0, pick(others)());
  return compileRule(specs.map((s) => validateSpec(s) as AlgorithmSpec));
}

describe(`a sliding log's compact bound admits nothing its own log refuses (seed ${SEED})`, () => {
  it("random traces: windows of 1–5 ms and more, costs, refunds, clock steps back, frame moves, restores, bans", () => {
    const next = mulberry32(SEED);
    const words = new Float64Array(2);
    let grids = 0;
    let admitted = 0;
    for (let run = 0; run < 600; run++) {
      const rule = randomRule(next);
      expect(rule.bare || packedRule(rule)).toBe(true);
      // Busy keys (many entries a window) as often as quiet ones.
      const pace = [1.5, 0.3, 0.05][run % 3] as number;
      const H = rule.horizonMs;
      const W = rule.members.find((m) => m.kind === "sliding-log")?.horizonMs as number;
      // `real`: the record fed only what the held one admitted (the capped store's oracle);
      // `held`: the record as the compact tier holds it, read back before every step.
      const real = createRecord(rule) as RuleRecord;
      let held = createRecord(rule) as RuleRecord;
      let t = T0 + Math.floor(next() * 10_000);
      let frame: PackFrame | undefined;
      const checks: Array<{ at: number; cost: number; back: boolean }> = [];
      for (let step = 0; step < 150; step++) {
        const r = next();
        if (r < 0.06) t -= Math.floor(next() * 2 * W);
        else if (r < 0.12) t += next() * W;
        else if (r < 0.14) t += Math.floor(next() * 40 * H);
        else t += Math.floor(next() * next() * pace * W);
        // The frame as the table keeps it (pack-frame.ts): moved when a write at t falls out.
        if (frame === undefined || !frameHolds(frame, t, H)) frame = newFrame(t, H);
        // One word in the table's frame, or a 2-word row (a snapshot's) read back as a restore does.
        const row = next() < 0.2;
        if (writeState(rule, held, words, 0, row ? 2 : 1, frame)) {
          if (!writtenExactly(rule, held, words, 0, row ? 2 : 1, frame)) grids++;
          held = row ? readState(rule, words, 0, 2) : readState(rule, words, 0, 1, frame);
        } else held = structuredClone(held);
        const op = next();
        const cost = next() < 0.7 ? 1 : 1 + Math.floor(next() * 3);
        const where = `seed ${SEED} run ${run} step ${step} ${rule.shape} t ${t - T0}`;
        if (op < 0.1 && checks.length > 0) {
          // A refund of a check both admitted, once, with its receipt and cost (as a client
          // gives one back); or, right after it (no time passed), without a receipt.
          const last = checks[checks.length - 1] as { at: number; cost: number; back: boolean };
          const bare = op < 0.04 && !last.back && last.at === t;
          const c = bare ? last : checks[Math.floor(next() * checks.length)];
          if (c === undefined || c.back) continue;
          c.back = true;
          decideRule(rule, held, t, c.cost, "refund", bare ? undefined : c.at);
          decideRule(rule, real, t, c.cost, "refund", bare ? undefined : c.at);
          continue;
        }
        const d = decideRule(rule, held, t, cost, "check");
        if (!d.allowed) continue;
        admitted++;
        checks.push({ at: t, cost, back: false });
        const e = decideRule(rule, real, t, cost, "check");
        if (!e.allowed) throw new Error(`escape: ${where} cost ${cost}`);
      }
    }
    // The runs did exercise the bound (not only exact words), and admitted plenty.
    expect(grids).toBeGreaterThan(5_000);
    expect(admitted).toBeGreaterThan(20_000);
  });
});

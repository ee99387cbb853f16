// The same seeded trace through ClusterStore (in real node:cluster workers, time injected by a
// ManualClock that travels with each check) and through a local MemoryStore: deep-equal decisions.
// Each group of events is issued in one turn, so it travels as one IPC batch.
import fc from "fast-check";
import { type AlgorithmSpec, createLimiter, type Decision, type Limiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { specArb } from "../properties/arbitraries.ts";
import { runPrimary } from "./run-primary.ts";

interface TraceEvent {
  rule: number;
  key: string;
  cost: number;
  op: "check" | "peek" | "reset" | "refund" | "penalty" | "block" | "get";
}
interface Trace {
  specs: Array<AlgorithmSpec | AlgorithmSpec[]>;
  /** The ban of each rule (null: none), for limiters created with `{ ban }`. */
  bans: Array<{ after: number; withinMs: number; forMs: number } | null>;
  groups: Array<{ t: number; events: TraceEvent[] }>;
}

/**
 * A trace from `seed`: every algorithm family (via specArb), a composite, a first-hit window, a
 * tight fixed window with a ban, 3 keys, costs 1–3; checks, peeks, refunds and resets.
 */
function makeTrace(seed: number): Trace {
  const single = fc.sample(specArb(false), { seed, numRuns: 8 });
  const specs: Trace["specs"] = [
    ...single,
    [single[0] as AlgorithmSpec, single[1] as AlgorithmSpec],
    { algorithm: "fixed-window", limit: 3, windowMs: 700, anchor: "first" },
    { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
  ];
  const bans: Trace["bans"] = specs.map((_, i) =>
    i === specs.length - 1 ? { after: 2, withinMs: 2000, forMs: 700 } : null,
  );
  const event = fc.record({
    rule: fc.integer({ min: 0, max: specs.length - 1 }),
    key: fc.constantFrom("a", "b", "c"),
    cost: fc.integer({ min: 1, max: 3 }),
    op: fc.constantFrom<TraceEvent["op"]>(
      ...Array(16).fill("check"),
      "peek",
      "peek",
      "refund",
      "refund",
      "reset",
      "penalty",
      "block",
      "get",
      "get",
    ),
  });
  const groups = fc.sample(
    fc.record({ dt: fc.integer({ min: 0, max: 400 }), events: fc.array(event, { minLength: 1, maxLength: 6 }) }),
    { seed: seed + 1, numRuns: 300 },
  );
  let t = 1_000_000;
  return { specs, bans, groups: groups.map((g) => ({ t: (t += g.dt), events: g.events })) };
}

/** The fixture's runTrace, on a MemoryStore in this process. */
async function runLocally({ specs, bans, groups }: Trace): Promise<Array<Array<Decision | "reset" | "fresh">>> {
  const clock = new ManualClock(0);
  const store = new MemoryStore();
  const limiters: Limiter<MemoryStore>[] = specs.map((spec, i) =>
    createLimiter(spec, { store, clock, name: `rule${i}`, ...(bans[i] ? { ban: bans[i] } : {}) }),
  );
  const out: Array<Array<Decision | "reset" | "fresh">> = [];
  for (const group of groups) {
    clock.set(group.t);
    out.push(
      group.events.map((e) => {
        const limiter = limiters[e.rule] as Limiter<MemoryStore>;
        if (e.op === "reset") {
          limiter.reset(e.key);
          return "reset";
        }
        if (e.op === "refund") return limiter.refund(e.key, e.cost);
        // rate-limiter-flexible's calls; a block on rules with a ban and without (src/core/block.ts).
        if (e.op === "penalty") return limiter.penalty(e.key, e.cost);
        if (e.op === "block") return limiter.block(e.key, e.cost * 300);
        if (e.op === "get") return limiter.get(e.key) ?? "fresh";
        return e.op === "peek" ? limiter.peek(e.key, e.cost) : limiter.tryAcquire(e.key, e.cost);
      }),
    );
  }
  return out;
}

describe("ClusterStore parity with MemoryStore", () => {
  for (const seed of [7, 2026]) {
    it(`seed ${seed}: decisions deep-equal, in 2 workers at once`, async () => {
      const trace = makeTrace(seed);
      const expected = await runLocally(trace);
      const out = await runPrimary<{ reports: Array<{ decisions: string }> }>("parity", { ...trace, workers: 2 });
      expect(out.reports).toHaveLength(2);
      // A trace that never denies would prove little: it must contain both answers.
      const flat = expected.flat().filter((d): d is Decision => d !== "reset" && d !== "fresh");
      // get answered both ways (null for a fresh key, a Decision otherwise).
      expect(expected.flat()).toContain("fresh");
      expect(flat.some((d) => d.allowed)).toBe(true);
      expect(flat.some((d) => !d.allowed)).toBe(true);
      expect(flat.some((d) => d.retryAfterMs === Number.POSITIVE_INFINITY)).toBe(true);
      expect(flat.some((d) => d.banned === true)).toBe(true);
      for (const r of out.reports) {
        const decisions = JSON.parse(r.decisions, (_, v) => (v === "Infinity" ? Number.POSITIVE_INFINITY : v));
        expect(decisions).toEqual(expected);
      }
    });
  }
});

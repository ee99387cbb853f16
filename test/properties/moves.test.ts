// Every decision of a store against an independent reference model (test/support/oracle.ts),
// on traces that make the moves users make: the clock stepping back, updateRule changing limits
// mid-trace, bans, refunds at any later time, resets, costs up to (and past) the limit, and
// instants aimed exactly at window, ban and refill boundaries.
import fc from "fast-check";
import { type AlgorithmSpec, ManualClock, MemoryStore, RateLimiterService, type Store } from "sluice";
import { describe, expect, it } from "vitest";
import { Counted } from "../support/counted.ts";
import { type OracleBan, RuleOracle } from "../support/oracle.ts";
import { pureStore } from "../support/redis-pure-store.ts";
import { runs } from "../support/seed.ts";

const limitArb = fc.integer({ min: 1, max: 6 });
const windowArb = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 2000 }));
/**
 * Emission intervals and rates where SPEC §5 makes every figure exact (whole-ms intervals,
 * whole tokens per second). With inexact quotients figures may differ from exact arithmetic
 * by 1 ms (SPEC §5); decisions.test.ts checks those against their own bound.
 */
const DIVISORS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000];
const intervalArb = fc.oneof(fc.constantFrom(...DIVISORS), fc.integer({ min: 1, max: 1000 }));
const rateArb = fc.oneof(fc.constantFrom(...DIVISORS), fc.integer({ min: 1, max: 50 }));
const leakArb = fc.constantFrom(...DIVISORS);

/** One member: any algorithm. */
const memberArb: fc.Arbitrary<AlgorithmSpec> = fc.oneof(
  fc.record({ limit: limitArb, windowMs: windowArb }).map((r) => ({ algorithm: "fixed-window" as const, ...r })),
  fc.record({ limit: limitArb, windowMs: windowArb }).map((r) => ({ algorithm: "sliding-log" as const, ...r })),
  fc.record({ limit: limitArb, windowMs: windowArb }).map((r) => ({ algorithm: "sliding-window" as const, ...r })),
  fc
    .record({ capacity: limitArb, refillPerSecond: rateArb })
    .map((r) => ({ algorithm: "token-bucket" as const, ...r })),
  fc
    .record({ limit: limitArb, T: intervalArb, burst: fc.option(limitArb, { nil: undefined }) })
    .map(({ limit, T, burst }) => ({
      algorithm: "gcra" as const,
      limit,
      periodMs: limit * T,
      ...(burst === undefined ? {} : { burst }),
    })),
  fc.record({ capacity: limitArb, leakPerSecond: leakArb }).map((r) => ({ algorithm: "leaky-bucket" as const, ...r })),
);

/** A member with other limits and the same shape (what updateRule keeps the state across). */
function sameShape(spec: AlgorithmSpec, pick: number): AlgorithmSpec {
  const l = 1 + (pick % 6);
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return { ...spec, limit: l };
    case "gcra":
      return {
        algorithm: "gcra",
        limit: l,
        periodMs: l * (1 + (Math.floor(pick / 8) % 700)),
        burst: 1 + (Math.floor(pick / 16) % 6),
      };
    case "leaky-bucket":
      return { ...spec, capacity: l, leakPerSecond: DIVISORS[Math.floor(pick / 8) % DIVISORS.length] as number };
    default:
      return spec; // a token bucket's capacity and rate are its shape
  }
}

const banArb = fc.record({
  after: fc.integer({ min: 1, max: 3 }),
  withinMs: fc.integer({ min: 1, max: 3000 }),
  forMs: fc.integer({ min: 1, max: 3000 }),
});

/** A rule: one member or a composite, with or without a ban. */
const ruleArb = fc.record({
  members: fc.oneof({ weight: 3, arbitrary: fc.tuple(memberArb) }, fc.array(memberArb, { minLength: 2, maxLength: 3 })),
  ban: fc.option(banArb, { nil: undefined, freq: 2 }),
});

/** How the clock moves before an event. */
type Move =
  | { kind: "same" }
  | { kind: "gap"; ms: number }
  | { kind: "back"; ms: number }
  // An earlier event's instant plus one of the rule's durations (window, ban span, emission
  // interval…), plus -1, 0 or +1: exactly on, or 1 ms either side of, a boundary.
  | { kind: "boundary"; from: number; duration: number; offset: -1 | 0 | 1 }
  // The next aligned window start (fixed and sliding windows), or 1 ms before it.
  | { kind: "aligned"; which: number; offset: -1 | 0 };

const moveArb = (back: boolean): fc.Arbitrary<Move> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant({ kind: "same" as const }) },
    { weight: 5, arbitrary: fc.integer({ min: 1, max: 400 }).map((ms) => ({ kind: "gap" as const, ms })) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 6000 }).map((ms) => ({ kind: "gap" as const, ms })) },
    {
      weight: back ? 2 : 0,
      arbitrary: fc.integer({ min: 1, max: 1500 }).map((ms) => ({ kind: "back" as const, ms })),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("boundary" as const),
        from: fc.nat(),
        duration: fc.nat(),
        offset: fc.constantFrom(-1 as const, 0 as const, 0 as const, 1 as const),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("aligned" as const),
        which: fc.nat(),
        offset: fc.constantFrom(-1 as const, 0 as const),
      }),
    },
  );

interface Event {
  move: Move;
  op: "check" | "peek" | "refund" | "reset" | "respec";
  key: number;
  /** Picks the cost: 1 + pick mod (limit + 1), so every cost up to one past the largest limit. */
  cost: number;
  pick: number;
}

const eventArb = (back: boolean): fc.Arbitrary<Event> =>
  fc.record({
    move: moveArb(back),
    op: fc.oneof(
      { weight: 12, arbitrary: fc.constant("check" as const) },
      { weight: 3, arbitrary: fc.constant("peek" as const) },
      { weight: 3, arbitrary: fc.constant("refund" as const) },
      { weight: 1, arbitrary: fc.constant("reset" as const) },
      { weight: 1, arbitrary: fc.constant("respec" as const) },
    ),
    key: fc.integer({ min: 0, max: 1 }),
    cost: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.nat()),
    pick: fc.nat(),
  });

/** The durations after which something changes for `specs` and `ban`: where boundaries fall. */
function durations(specs: AlgorithmSpec[], ban: OracleBan | undefined): number[] {
  const out: number[] = [];
  for (const s of specs) {
    if ("windowMs" in s) out.push(s.windowMs, 2 * s.windowMs);
    if (s.algorithm === "gcra") {
      const burst = s.burst ?? s.limit;
      for (let k = 1; k <= burst; k++)
        out.push(Math.floor((k * s.periodMs) / s.limit), Math.ceil((k * s.periodMs) / s.limit));
    }
    const rate =
      s.algorithm === "token-bucket" ? s.refillPerSecond : s.algorithm === "leaky-bucket" ? s.leakPerSecond : 0;
    if (rate > 0) {
      const cap = "capacity" in s ? s.capacity : 1;
      for (let k = 1; k <= cap; k++) out.push(Math.floor((k * 1000) / rate), Math.ceil((k * 1000) / rate));
    }
  }
  if (ban !== undefined) out.push(ban.withinMs, ban.forMs, ban.withinMs + ban.forMs);
  return out;
}

const START = 1_800_000_000_000;
const KEYS = ["a", "b"];

/**
 * Runs `events` through a RateLimiterService on `store` and through one oracle per key, comparing
 * every decision; counts what was exercised into `seen`.
 */
function runTrace(
  store: Store,
  members: AlgorithmSpec[],
  ban: OracleBan | undefined,
  start: number,
  events: Event[],
  seen: Counted,
): void {
  const clock = new ManualClock(start);
  const service = new RateLimiterService({ clock, store });
  const composite = members.length > 1;
  const spec = () => (composite ? current : current[0]) as AlgorithmSpec | AlgorithmSpec[];
  let current = members;
  service.addRule("r", spec(), ban === undefined ? undefined : { ban });
  const fresh = () => new RuleOracle(spec(), ban);
  const oracles = KEYS.map(fresh);
  const spans = durations(members, ban);
  const windows = members.flatMap((s) => ("windowMs" in s ? [s.windowMs] : []));
  const past: number[] = [start];
  const limit = () =>
    Math.max(
      ...current.map((s) => (s.algorithm === "gcra" ? (s.burst ?? s.limit) : "limit" in s ? s.limit : s.capacity)),
    );
  for (const [i, e] of events.entries()) {
    const now = clock.now();
    const m = e.move;
    if (m.kind === "gap") clock.set(now + m.ms);
    else if (m.kind === "back") clock.set(now - m.ms);
    else if (m.kind === "boundary" && spans.length > 0) {
      const from = past[past.length - 1 - (m.from % Math.min(past.length, 16))] as number;
      const to = from + (spans[m.duration % spans.length] as number) + m.offset;
      // Forward only unless the trace steps back anyway (then any instant is fair).
      if (to >= now || events.some((x) => x.move.kind === "back")) clock.set(to);
      seen.hit("boundary instants");
    } else if (m.kind === "aligned" && windows.length > 0) {
      const W = windows[m.which % windows.length] as number;
      clock.set((Math.floor(now / W) + 1) * W + m.offset);
      seen.hit("boundary instants");
    }
    const t = clock.now();
    past.push(t);
    const k = e.key;
    const key = KEYS[k] as string;
    const cost = e.cost === 0 ? 1 : 1 + (e.cost % (limit() + 1));
    const where = `event ${i} (${e.op} ${key} cost ${cost} at start+${t - start})`;
    switch (e.op) {
      case "reset":
        service.reset("r", key);
        oracles[k] = fresh();
        continue;
      case "respec": {
        current = current.map((s, j) => sameShape(s, e.pick + j * 7));
        service.updateRule("r", spec(), ban === undefined ? undefined : { ban });
        for (const [j, o] of oracles.entries()) oracles[j] = o.respec(spec(), ban);
        seen.hit("limit changes");
        continue;
      }
      case "check": {
        const want = (oracles[k] as RuleOracle).check(t, cost);
        expect(service.check("r", key, { cost }), where).toEqual(want);
        seen.hit(want.allowed ? "admitted" : "denied");
        if (want.banned) seen.hit("banned");
        if (cost === limit()) seen.hit("cost = limit");
        if (cost > limit()) seen.hit("cost > limit");
        break;
      }
      case "peek":
        expect(service.peek("r", key, { cost }), where).toEqual((oracles[k] as RuleOracle).peek(t, cost));
        break;
      case "refund": {
        const before = (oracles[k] as RuleOracle).peek(t, 1).remaining;
        const want = (oracles[k] as RuleOracle).refund(t, cost);
        expect(service.refund("r", key, { cost }), where).toEqual(want);
        if (want.remaining > before) seen.hit("refunds that gave back");
        break;
      }
    }
    if (t < now) seen.hit("clock stepped back");
    seen.hit("compared");
  }
}

describe("stores against the reference model", () => {
  it("the MemoryStore decides every check, peek, refund, reset and limit change like the model (time forward)", () => {
    const seen = new Counted();
    fc.assert(
      fc.property(
        ruleArb,
        fc.array(eventArb(false), { minLength: 20, maxLength: 80, size: "max" }),
        ({ members, ban }, events) => {
          runTrace(new MemoryStore(), members, ban, START, events, seen);
        },
      ),
      { numRuns: runs(300) },
    );
    seen.expectAtLeast({
      compared: 10_000,
      denied: 1_500,
      banned: 300,
      "refunds that gave back": 300,
      "limit changes": 200,
      "boundary instants": 3_000,
      "cost = limit": 500,
      "cost > limit": 300,
    });
  });

  it("decideRule on records kept forever decides like the model, with the clock stepping back", () => {
    const seen = new Counted();
    fc.assert(
      fc.property(
        ruleArb,
        fc.constantFrom(0, 123_456, START),
        fc.array(eventArb(true), { minLength: 20, maxLength: 80, size: "max" }),
        ({ members, ban }, start, events) => {
          runTrace(pureStore(), members, ban, start, events, seen);
        },
      ),
      { numRuns: runs(300) },
    );
    seen.expectAtLeast({
      compared: 10_000,
      denied: 2_000,
      banned: 300,
      "clock stepped back": 1_000,
      "refunds that gave back": 300,
      "limit changes": 200,
      "boundary instants": 3_000,
    });
  });
});

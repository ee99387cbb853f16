// SharedMemoryStore in one thread: every decision equals MemoryStore's (all six algorithms,
// composites, bans, peeks, refunds, resets, limit changes), a capped table only ever
// over-counts, rules that cannot fit are refused, and attached instances share state and rules.
// The cross-thread suites are in test/threads/.
import fc from "fast-check";
import {
  type AlgorithmSpec,
  ArgumentError,
  ConfigError,
  createLimiter,
  type Decision,
  ManualClock,
  MemoryStore,
  RateLimiterService,
  StoreError,
} from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { specArb } from "../properties/arbitraries.ts";

type Op = "check" | "peek" | "refund" | "reset";
interface Step {
  gap: number;
  key: number;
  cost: number;
  op: Op;
}

const stepArb = (keys: number) =>
  fc.record({
    gap: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3000 })),
    key: fc.integer({ min: 0, max: keys - 1 }),
    cost: fc.integer({ min: 1, max: 3 }),
    op: fc.constantFrom<Op>("check", "check", "check", "check", "peek", "refund", "reset"),
  });

const ruleArb = fc.record({
  specs: fc.array(specArb(false), { minLength: 1, maxLength: 3 }),
  composite: fc.boolean(),
  ban: fc.option(
    fc.record({
      after: fc.integer({ min: 1, max: 3 }),
      withinMs: fc.integer({ min: 1, max: 5000 }),
      forMs: fc.integer({ min: 1, max: 5000 }),
    }),
    { nil: undefined },
  ),
});

/** Runs the same trace through one limiter per store; returns both decision lists. */
function replayBoth(
  rule: {
    specs: AlgorithmSpec[];
    composite: boolean;
    ban: { after: number; withinMs: number; forMs: number } | undefined;
  },
  steps: Step[],
  start: number,
  shared: SharedMemoryStore,
): [Array<Decision | undefined>, Array<Decision | undefined>] {
  const spec = rule.composite || rule.specs.length > 1 ? rule.specs : (rule.specs[0] as AlgorithmSpec);
  const clock = new ManualClock(start);
  const opts = { clock, name: "r", ...(rule.ban === undefined ? {} : { ban: rule.ban }) };
  const a = createLimiter(spec, { ...opts, store: new MemoryStore() });
  const b = createLimiter(spec, { ...opts, store: shared });
  const out: [Array<Decision | undefined>, Array<Decision | undefined>] = [[], []];
  let now = start;
  for (const s of steps) {
    // Time moves forward: a clock stepping back past a record's expiry decides as the store
    // happened to keep it (MemoryStore drops fresh records by generations, this store when it
    // needs the room), which no store promises alike.
    now += s.gap;
    clock.set(now);
    const key = `key-${s.key}`;
    for (const [i, limiter] of [a, b].entries()) {
      const d =
        s.op === "check"
          ? limiter.tryAcquire(key, s.cost)
          : s.op === "peek"
            ? limiter.peek(key, s.cost)
            : s.op === "refund"
              ? limiter.refund(key, s.cost)
              : limiter.reset(key);
      out[i as 0 | 1].push(d as Decision | undefined);
    }
  }
  return out;
}

describe("SharedMemoryStore, one thread", () => {
  for (const start of [0, 1_800_000_000_000]) {
    it(`decides exactly as MemoryStore (seeded traces, every algorithm, composites, bans; epoch ${start})`, () => {
      const seed = 18_001 + start / 1e9;
      let compared = 0;
      fc.assert(
        fc.property(ruleArb, fc.array(stepArb(4), { minLength: 20, maxLength: 80 }), (rule, steps) => {
          const shared = new SharedMemoryStore({ maxKeys: 64, recordWords: 40 });
          const [a, b] = replayBoth(rule, steps, start, shared);
          expect(b).toEqual(a);
          compared += a.length;
        }),
        { seed, numRuns: 150 },
      );
      expect(compared).toBeGreaterThan(1000);
    });
  }

  it("a table too small for its keys only ever over-counts: every check it admits, MemoryStore admits", () => {
    let summarised = 0;
    fc.assert(
      fc.property(specArb(false), fc.array(stepArb(600), { minLength: 200, maxLength: 1500 }), (spec, steps) => {
        // 16 buckets of 8 entries for 600 keys: most keys pass through the summary.
        const shared = new SharedMemoryStore({ maxKeys: 1, summaryWidth: 64, recordWords: 9 });
        const checks = steps.map((s) => ({ ...s, op: "check" as const }));
        const [exact, capped] = replayBoth(
          { specs: [spec], composite: false, ban: undefined },
          checks,
          1_800_000_000_000,
          shared,
        );
        // Per key, until the small table first refuses what MemoryStore admits: from then on the
        // exact key has spent units the over-counted one kept (a token bucket refused 3 tokens
        // at a read-back balance of 2 still holds them), so a later check may pass on the small
        // table alone without it ever admitting more in total.
        const diverged = new Set<number>();
        capped.forEach((d, i) => {
          const key = (checks[i] as Step).key;
          if (diverged.has(key)) return;
          if (d?.allowed) expect(exact[i]?.allowed, `check #${i}`).toBe(true);
          else if (exact[i]?.allowed) diverged.add(key);
        });
        summarised += shared.stats().evicted;
      }),
      { seed: 18_002, numRuns: 40 },
    );
    expect(summarised).toBeGreaterThan(0);
  });

  it("a reset of a summarised key makes its next decisions a fresh key's, however many evictions follow", () => {
    const clock = new ManualClock(1_800_000_000_000);
    const store = new SharedMemoryStore({ maxKeys: 1 });
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
      { store, clock, name: "r" },
    );
    limiter.tryAcquire("victim", 2);
    for (let i = 0; i < 2000; i++) limiter.tryAcquire(`other-${i}`);
    expect(store.stats().evicted).toBeGreaterThan(0);
    expect(limiter.peek("victim")).toMatchObject({ allowed: false, approximate: true });
    limiter.reset("victim");
    // However many evictions follow: the reset is pinned while the summary still holds the key.
    const evicted = store.stats().evicted;
    for (let i = 0; i < 2000; i++) limiter.tryAcquire(`later-${i}`);
    expect(store.stats().evicted).toBeGreaterThan(evicted + 1000);
    expect(limiter.tryAcquire("victim")).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 60_000,
      delayMs: 0,
    });
    // The pinned record counts exactly from then on, through more evictions.
    for (let i = 0; i < 2000; i++) limiter.tryAcquire(`last-${i}`);
    expect(limiter.tryAcquire("victim")).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.tryAcquire("victim")).toMatchObject({ allowed: false, remaining: 0 });
    expect(store.stats().unpinned).toBe(0);
  });

  it("refuses a rule whose records cannot fit, naming the words it needs", () => {
    const store = new SharedMemoryStore({ maxKeys: 100 });
    const bind = () => createLimiter({ algorithm: "sliding-log", limit: 1000, windowMs: 1000 }, { store, name: "log" });
    expect(bind).toThrow(ConfigError);
    expect(bind).toThrow(/needs 1001 words per key.*recordWords: 1001/);
    const big = new SharedMemoryStore({ maxKeys: 10, recordWords: 1001 });
    expect(() =>
      createLimiter({ algorithm: "sliding-log", limit: 1000, windowMs: 1000 }, { store: big, name: "log" }),
    ).not.toThrow();
    expect(() =>
      createLimiter(
        { algorithm: "gcra", limit: 5, periodMs: 1000 },
        { store, ban: { after: 1, withinMs: 1, forMs: 1 } },
      ),
    ).not.toThrow();
  });

  it("checks its options and handles", () => {
    expect(() => new SharedMemoryStore({} as never)).toThrow(/`maxKeys` must be an integer/);
    expect(() => new SharedMemoryStore({ maxKeys: 10, summaryWidth: 100 })).toThrow(/power of two/);
    expect(() => new SharedMemoryStore({ maxKeys: 10, bogus: 1 } as never)).toThrow(/unknown option `bogus`/);
    expect(() => SharedMemoryStore.attach({} as never)).toThrow(StoreError);
    // A handle of an earlier version (a bare SharedArrayBuffer, no memory) and a memory that is not a store.
    expect(() =>
      SharedMemoryStore.attach({ kind: "sluice/threads", buffer: new SharedArrayBuffer(4096) } as never),
    ).toThrow(/holds no SharedMemoryStore memory/);
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    expect(() => SharedMemoryStore.attach({ kind: "sluice/threads", memory } as never)).toThrow(
      /not a SharedMemoryStore/,
    );
    // One store is one 32-bit WebAssembly memory: past 4 GiB the options are refused, naming them.
    expect(() => new SharedMemoryStore({ maxKeys: 2 ** 26 })).toThrow(/maxKeys: 67108864.*recordWords: 6.*4 GiB/);
    expect(() => new SharedMemoryStore({ maxKeys: 2 ** 26 })).toThrow(ArgumentError);
  });

  it("instances attached to one buffer share records, rules and counters", () => {
    const clock = new ManualClock(1_800_000_000_000);
    const owner = new SharedMemoryStore({ maxKeys: 100 });
    const other = SharedMemoryStore.attach(structuredClone(owner.handle));
    const a = new RateLimiterService({ store: owner, clock }).addRule("api", {
      algorithm: "gcra",
      limit: 3,
      periodMs: 60_000,
    });
    const b = new RateLimiterService({ store: other, clock }).addRule("api", {
      algorithm: "gcra",
      limit: 3,
      periodMs: 60_000,
    });
    expect(
      [a.check("api", "k"), b.check("api", "k"), a.check("api", "k"), b.check("api", "k")].map((d) => d.allowed),
    ).toEqual([true, true, true, false]);
    // A limit raised in one "thread" is the limit in all of them (same id and shape).
    a.updateRule("api", { algorithm: "gcra", limit: 4, periodMs: 60_000 });
    expect((b.check("api", "k") as Decision).limit).toBe(4);
    expect(b.peek("api", "k").remaining).toBe(0);
    b.reset("api", "k");
    expect(a.peek("api", "k").remaining).toBe(3); // a fresh key: one unit of 4 taken by the peek's question
    expect(other.stats()).toMatchObject({ keys: 0, rules: 1, maxKeys: 100 });
    a.check("api", "z");
    expect(owner.stats().keys).toBe(1);
  });
});

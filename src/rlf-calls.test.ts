// rate-limiter-flexible's calls (SPEC §15): penalty, block and get, on the limiter and the
// service, as tables at fixed instants (0 and today's epoch) and seeded properties.
import fc from "fast-check";
import {
  ArgumentError,
  createLimiter,
  type Decision,
  type Limiter,
  type LimitSpec,
  ManualClock,
  MemoryStore,
  RateLimiterService,
  StoreError,
} from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const BASES = [0, 1.8e12];

/**
 * Penalty of 5 units at `base` on a fresh key of a 2-per-second rule: the instant the key allows
 * one unit again, and the instant its state is fresh (get answers null), as each algorithm says.
 */
const PENALTY: [string, LimitSpec, number, number][] = [
  ["fixed-window", { algorithm: "fixed-window", limit: 2, windowMs: 1000 }, 1000, 1000],
  ["fixed-window first", { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" }, 1000, 1000],
  ["sliding-log", { algorithm: "sliding-log", limit: 2, windowMs: 1000 }, 1000, 1000],
  // Weighted: 5·(1000−el)/1000 + 1 ≤ 2 from el = 800 of the next window; fresh two windows on.
  ["sliding-window", { algorithm: "sliding-window", limit: 2, windowMs: 1000 }, 1800, 2000],
  // Balance 2 − 5 = −3 tokens at 2/s: one token at +2 s, full at +2.5 s.
  ["token-bucket", { algorithm: "token-bucket", capacity: 2, refillPerSecond: 2 }, 2000, 2500],
  // TAT = now + 5·500: one unit fits once TAT − now ≤ τ − T = 500.
  ["gcra", { algorithm: "gcra", limit: 2, periodMs: 1000 }, 2000, 2500],
  ["leaky-bucket", { algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 2 }, 2000, 2500],
];

describe.each(BASES)("at base %d", (base) => {
  it.each(PENALTY)("%s: penalty past the limit, then the key recovers exactly", (_name, spec, allowAt, freshAt) => {
    const clock = new ManualClock(base);
    const limiter = createLimiter(spec, { clock });
    const d = limiter.penalty("k", 5);
    expect(d.allowed).toBe(false);
    expect(d.remaining).toBe(0);
    expect(d.retryAfterMs).toBe(allowAt);
    expect(limiter.get("k")).toEqual(limiter.peek("k"));
    clock.set(base + allowAt - 1);
    expect(limiter.peek("k").allowed).toBe(false);
    expect(limiter.peek("k").retryAfterMs).toBe(1);
    clock.set(base + allowAt);
    expect(limiter.peek("k").allowed).toBe(true);
    clock.set(base + freshAt - 1);
    expect(limiter.get("k")).not.toBeNull();
    clock.set(base + freshAt);
    expect(limiter.get("k")).toBeNull();
    expect(limiter.tryAcquire("k")).toEqual(createLimiter(spec, { clock }).tryAcquire("k"));
  });

  it.each(PENALTY)("%s: a penalty that fits takes exactly what a check takes", (_name, spec) => {
    const clock = new ManualClock(base + 250);
    const a = createLimiter(spec, { clock });
    const b = createLimiter(spec, { clock });
    expect(a.penalty("k")).toEqual(b.tryAcquire("k") && b.peek("k"));
    clock.set(base + 400);
    expect(a.peek("k")).toEqual(b.peek("k"));
  });

  it("block: banned for ms, retryAfterMs the time left, ending exactly at ms", () => {
    const clock = new ManualClock(base);
    const spec: LimitSpec = { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 };
    const limiter = createLimiter(spec, { clock, ban: { after: 100, withinMs: 1000, forMs: 1000 } });
    const d = limiter.block("k", 5000);
    expect(d).toMatchObject({ allowed: false, banned: true, retryAfterMs: 5000, remaining: 0 });
    clock.set(base + 4999);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: false, banned: true, retryAfterMs: 1 });
    expect(limiter.get("k")).toMatchObject({ banned: true, retryAfterMs: 1 });
    clock.set(base + 5000);
    expect(limiter.get("k")).toBeNull();
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 2 });
    // A shorter block replaces a running one (rate-limiter-flexible's block sets the expiry).
    limiter.block("k", 60_000);
    expect(limiter.block("k", 10).retryAfterMs).toBe(10);
  });

  it("block outlives the rule's horizon in a MemoryStore (the record is kept until it ends)", () => {
    const clock = new ManualClock(base);
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 100 },
      { clock, ban: { after: 5, withinMs: 100, forMs: 100 } },
    );
    limiter.block("k", 1_000_000);
    // Other keys' traffic rotates the store's generations many times over.
    for (let t = base; t < base + 999_000; t += 50_000) {
      clock.set(t);
      limiter.tryAcquire(`other${t}`);
    }
    clock.set(base + 999_999);
    expect(limiter.tryAcquire("k")).toMatchObject({ banned: true, retryAfterMs: 1 });
    clock.set(base + 1_000_000);
    expect(limiter.tryAcquire("k").allowed).toBe(true);
  });

  it("get: null for an unknown key and after reset, the peek of one unit otherwise", () => {
    const clock = new ManualClock(base);
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 1000 }, { clock });
    expect(limiter.get("k")).toBeNull();
    limiter.tryAcquire("k", 2);
    const got = limiter.get("k") as Decision;
    expect(got).toEqual(limiter.peek("k"));
    expect(got).toMatchObject({ allowed: true, remaining: 0, limit: 3 });
    limiter.reset("k");
    expect(limiter.get("k")).toBeNull();
    // A one-member composite answers null too (not a Decision with parts).
    expect(createLimiter([{ algorithm: "fixed-window", limit: 1, windowMs: 10 }], { clock }).get("x")).toBeNull();
  });
});

describe("SharedMemoryStore decides them as the MemoryStore does", () => {
  it.each(BASES)("base %d: seeded trace, every answer deep-equal", (base) => {
    const seed = 4242;
    fc.assert(
      fc.property(
        fc.constantFrom(...PENALTY.map(([, s]) => s)),
        fc.array(
          fc.record({
            dt: fc.integer({ min: 0, max: 900 }),
            call: fc.constantFrom("check", "penalty", "get", "block", "reset"),
            cost: fc.integer({ min: 1, max: 4 }),
          }),
          { maxLength: 25 },
        ),
        (spec, ops) => {
          const clock = new ManualClock(base);
          const ban = { after: 50, withinMs: 1000, forMs: 1000 };
          const shared = new SharedMemoryStore({ maxKeys: 64 });
          const a = createLimiter(spec, { clock, ban, store: new MemoryStore() });
          const b = createLimiter(spec, { clock, ban, store: shared });
          for (const o of ops) {
            clock.set(clock.now() + o.dt);
            const run = (l: Limiter) =>
              o.call === "check"
                ? l.tryAcquire("k", o.cost)
                : o.call === "penalty"
                  ? l.penalty("k", o.cost)
                  : o.call === "block"
                    ? l.block("k", o.cost * 300)
                    : o.call === "reset"
                      ? l.reset("k")
                      : l.get("k");
            expect(run(b)).toEqual(run(a));
          }
        },
      ),
      { seed, numRuns: 150, verbose: true },
    );
  });
});

describe("MemoryStore tiers under maxKeys", () => {
  it("a penalty and a block on keys pushed out to the compact tier and the summary still count", () => {
    const clock = new ManualClock(1.8e12);
    const store = new MemoryStore({ maxKeys: 4 });
    const ban = { after: 50, withinMs: 60_000, forMs: 60_000 };
    const spec: LimitSpec = { algorithm: "fixed-window", limit: 3, windowMs: 60_000 };
    const limiter = createLimiter(spec, { clock, store, ban });
    for (let i = 0; i < 40; i++) limiter.tryAcquire(`k${i}`);
    // k0..k35 were pushed out of the exact table; their records still hold one unit each.
    for (const key of ["k0", "k1", "k2"]) {
      expect(limiter.penalty(key, 2)).toMatchObject({ allowed: false, remaining: 0 });
      expect(limiter.tryAcquire(key).allowed).toBe(false);
    }
    expect(limiter.block("k3", 5000)).toMatchObject({ banned: true, retryAfterMs: 5000 });
    clock.set(1.8e12 + 4999);
    expect(limiter.tryAcquire("k3")).toMatchObject({ banned: true });
    expect(limiter.get("k3")).not.toBeNull();
    clock.set(1.8e12 + 5000);
    expect(limiter.tryAcquire("k3")).toMatchObject({ allowed: true });
  });
});

describe("arguments", () => {
  it("refuses bad costs and bad ms with ArgumentError, with or without a ban", () => {
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 10 });
    expect(() => limiter.penalty("k", 0)).toThrow(ArgumentError);
    expect(() => limiter.penalty(7 as unknown as string)).toThrow("key must be a string");
    const banned = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 10 },
      { ban: { after: 1, withinMs: 10, forMs: 10 } },
    );
    for (const ms of [0, -1, 1.5, Number.NaN, "5"]) {
      expect(() => banned.block("k", ms as number)).toThrow("block `ms` must be a positive integer");
      expect(() => limiter.block("k", ms as number)).toThrow("block `ms` must be a positive integer");
    }
  });

  it("stores without these calls refuse them with a StoreError, never decide them wrongly", () => {
    const store = { synchronous: true, bind: new MemoryStore().bind.bind(new MemoryStore()) } as const;
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 10 }, { store });
    expect(() => limiter.penalty("k")).toThrow(StoreError);
    expect(() => limiter.get("k")).toThrow("get is not supported on Object yet");
  });
});

describe("RateLimiterService", () => {
  it("penalty, block and get by rule and tier", () => {
    const clock = new ManualClock(1.8e12);
    const service = new RateLimiterService({ clock }).addRule(
      "login",
      { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
      {
        tiers: { pro: { algorithm: "fixed-window", limit: 10, windowMs: 1000 } },
        ban: { after: 9, withinMs: 9, forMs: 9 },
      },
    );
    expect(service.get("login", "alice")).toBeNull();
    expect(service.penalty("login", "alice", { cost: 3 })).toMatchObject({ allowed: false, remaining: 0 });
    expect(service.penalty("login", "alice", { tier: "pro", cost: 3 })).toMatchObject({ remaining: 6 });
    expect(service.get("login", "alice", { tier: "pro" })).toMatchObject({ allowed: true, remaining: 6 });
    expect(service.block("login", "bob", 700)).toMatchObject({ banned: true, retryAfterMs: 700 });
    expect(service.check("login", "bob")).toMatchObject({ banned: true, allowed: false });
    service.reset("login", "alice");
    expect(service.get("login", "alice")).toBeNull();
    expect(service.get("login", "alice", { tier: "pro" })).toBeNull();
  });
});

describe("seeded properties", () => {
  const specs = PENALTY.map(([, s]) => s);
  const op = fc.record({
    dt: fc.integer({ min: 0, max: 1500 }),
    call: fc.constantFrom("check", "penalty", "get", "peek"),
    cost: fc.integer({ min: 1, max: 4 }),
  });

  it("get is null exactly when the key decides like a fresh one, else the peek of one unit", () => {
    const seed = 1715;
    fc.assert(
      fc.property(
        fc.constantFrom(...specs),
        fc.constantFrom(...BASES),
        fc.array(op, { maxLength: 30 }),
        (spec, base, ops) => {
          const clock = new ManualClock(base);
          const limiter = createLimiter(spec, { clock });
          for (const o of ops) {
            clock.set(clock.now() + o.dt);
            if (o.call === "check") limiter.tryAcquire("k", o.cost);
            else if (o.call === "penalty") limiter.penalty("k", o.cost);
            const got = limiter.get("k");
            const peek = limiter.peek("k");
            if (got !== null) expect(got).toEqual(peek);
            else {
              // Equivalent to fresh: every cost decides as on a fresh key, now and later.
              const fresh = createLimiter(spec, { clock });
              for (const cost of [1, 2, 3]) expect(limiter.peek("k", cost)).toEqual(fresh.peek("k", cost));
            }
          }
        },
      ),
      { seed, numRuns: 200, verbose: true },
    );
  });

  it("a penalty that fits changes the state exactly as a check of the same cost", () => {
    const seed = 2026;
    fc.assert(
      fc.property(
        fc.constantFrom(...specs),
        fc.constantFrom(...BASES),
        fc.array(op, { maxLength: 30 }),
        (spec, base, ops) => {
          const clock = new ManualClock(base);
          const a = createLimiter(spec, { clock });
          const b = createLimiter(spec, { clock });
          for (const o of ops) {
            clock.set(clock.now() + o.dt);
            if (a.peek("k", o.cost).allowed) {
              a.penalty("k", o.cost);
              b.tryAcquire("k", o.cost);
            }
            for (const cost of [1, 2, 3]) expect(a.peek("k", cost)).toEqual(b.peek("k", cost));
          }
        },
      ),
      { seed, numRuns: 200, verbose: true },
    );
  });
});

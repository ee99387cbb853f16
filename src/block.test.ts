// `limiter.block(key, ms)` on rules without a `ban` (SPEC §15, src/core/block.ts): tables at a
// fixed instant, and a seeded property holding it to the same block kept in a ban slot.
import fc from "fast-check";
import {
  createLimiter,
  type Limiter,
  type LimitSpec,
  ManualClock,
  MemoryStore,
  RateLimiterService,
  type Store,
} from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 1);

/** Every algorithm, and a composite, as plain rules (no ban). */
const RULES: [string, LimitSpec | LimitSpec[]][] = [
  ["fixed-window", { algorithm: "fixed-window", limit: 2, windowMs: 1000 }],
  ["fixed-window first", { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" }],
  ["sliding-log", { algorithm: "sliding-log", limit: 2, windowMs: 1000 }],
  ["sliding-window", { algorithm: "sliding-window", limit: 2, windowMs: 1000 }],
  ["token-bucket", { algorithm: "token-bucket", capacity: 2, refillPerSecond: 2 }],
  ["gcra", { algorithm: "gcra", limit: 2, periodMs: 1000 }],
  ["leaky-bucket", { algorithm: "leaky-bucket", capacity: 2, leakPerSecond: 2 }],
  [
    "composite",
    [
      { algorithm: "gcra", limit: 2, periodMs: 1000 },
      { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
    ],
  ],
];

const STORES: [string, () => Store & { readonly synchronous: true }][] = [
  ["MemoryStore", () => new MemoryStore()],
  ["MemoryStore({ maxKeys: 4 })", () => new MemoryStore({ maxKeys: 4, seed: 7 })],
  ["SharedMemoryStore", () => new SharedMemoryStore({ maxKeys: 64, recordWords: 12 })],
];

describe.each(STORES)("%s", (_store, makeStore) => {
  it.each(RULES)("%s: blocked until now + ms, then exactly as before", (_name, spec) => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter(spec, { clock, store: makeStore() });
    const twin = createLimiter(spec, { clock, store: makeStore() });
    limiter.tryAcquire("k");
    twin.tryAcquire("k");
    const d = limiter.block("k", 5000);
    expect(d).toMatchObject({ allowed: false, banned: true, remaining: 0, retryAfterMs: 5000 });
    expect(d.resetMs).toBe(Math.max(5000, twin.peek("k").resetMs));
    // Checks while blocked take nothing; the get reports the block.
    clock.set(T0 + 4999);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: false, banned: true, retryAfterMs: 1 });
    expect(limiter.peek("k", 2)).toMatchObject({ allowed: false, banned: true, retryAfterMs: 1 });
    expect(limiter.get("k")).toMatchObject({ banned: true, retryAfterMs: 1 });
    // Other keys are not blocked.
    expect(limiter.tryAcquire("other")).toEqual(twin.tryAcquire("other"));
    clock.set(T0 + 5000);
    expect(limiter.get("k")).toEqual(twin.get("k"));
    expect(limiter.tryAcquire("k")).toEqual(twin.tryAcquire("k"));
  });

  it.each(RULES)("%s: reset clears a block; a refund does not lift it", (_name, spec) => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter(spec, { clock, store: makeStore() });
    limiter.tryAcquire("k");
    limiter.block("k", 1000);
    expect(limiter.refund("k")).toMatchObject({ banned: true, retryAfterMs: 1000 });
    expect(limiter.tryAcquire("k")).toMatchObject({ banned: true });
    limiter.reset("k");
    expect(limiter.get("k")).toBeNull();
    expect(limiter.tryAcquire("k")).toEqual(createLimiter(spec, { clock, store: makeStore() }).tryAcquire("k"));
  });

  it("a block replaces a running one, longer or shorter", () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({ algorithm: "gcra", limit: 5, periodMs: 1000 }, { clock, store: makeStore() });
    limiter.block("k", 60_000);
    expect(limiter.block("k", 10)).toMatchObject({ banned: true, retryAfterMs: 10 });
    clock.set(T0 + 10);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 4 });
    expect(limiter.block("k", 20).retryAfterMs).toBe(20);
    expect(limiter.block("k", 90_000).retryAfterMs).toBe(90_000);
    clock.set(T0 + 10 + 89_999);
    expect(limiter.tryAcquire("k")).toMatchObject({ banned: true, retryAfterMs: 1 });
  });

  it("retryAfterMs is never sooner than the members allow (a penalty past the block)", () => {
    const clock = new ManualClock(T0);
    // 2 per second: a penalty of 6 units needs 2.5 s before one unit fits.
    const limiter = createLimiter({ algorithm: "gcra", limit: 2, periodMs: 1000 }, { clock, store: makeStore() });
    limiter.penalty("k", 6);
    expect(limiter.block("k", 100)).toMatchObject({ banned: true, retryAfterMs: 2500 });
    // A penalty while blocked still counts, and the block still answers.
    expect(limiter.penalty("k", 2)).toMatchObject({ banned: true, retryAfterMs: 3500 });
    clock.set(T0 + 100);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: false, retryAfterMs: 3400 });
    expect(limiter.tryAcquire("k").banned).toBeUndefined();
  });

  it("a block outlives the rule's horizon (other keys' traffic rotates the store meanwhile)", () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 100 },
      { clock, store: makeStore() },
    );
    limiter.block("k", 1_000_000);
    for (let t = T0; t < T0 + 999_000; t += 50_000) {
      clock.set(t);
      limiter.tryAcquire(`other${t}`);
    }
    clock.set(T0 + 999_999);
    expect(limiter.tryAcquire("k")).toMatchObject({ banned: true, retryAfterMs: 1 });
    clock.set(T0 + 1_000_000);
    expect(limiter.tryAcquire("k").allowed).toBe(true);
  });
});

const CAPPED: [string, () => Store & { readonly synchronous: true }][] = [
  ["MemoryStore({ maxKeys: 4 })", () => new MemoryStore({ maxKeys: 4, seed: 3 })],
  ["SharedMemoryStore({ maxKeys: 16 })", () => new SharedMemoryStore({ maxKeys: 16 })],
];

describe.each(CAPPED)("%s", (_name, makeStore) => {
  it("blocks hold while a flood pushes other keys out to the compact tier and the summary", () => {
    // As many blocks as maxKeys: blocks count against it (capped.test.ts).
    const clock = new ManualClock(T0);
    const store = makeStore();
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 3, windowMs: 60_000 }, { clock, store });
    for (let i = 0; i < 4; i++) limiter.block(`k${i}`, 5000);
    for (let i = 0; i < 400; i++) limiter.tryAcquire(`flood${i}`);
    clock.set(T0 + 4999);
    for (let i = 0; i < 4; i++) expect(limiter.tryAcquire(`k${i}`)).toMatchObject({ banned: true, retryAfterMs: 1 });
    clock.set(T0 + 5000);
    for (let i = 0; i < 4; i++) expect(limiter.tryAcquire(`k${i}`).allowed).toBe(true);
  });
});

describe("RateLimiterService", () => {
  it("blocks by rule and tier without a ban; a tier's block leaves the other tiers alone", () => {
    const clock = new ManualClock(T0);
    const service = new RateLimiterService({ clock }).addRule(
      "api",
      { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
      { tiers: { pro: { algorithm: "gcra", limit: 10, periodMs: 1000 } } },
    );
    expect(service.block("api", "alice", 700, { tier: "pro" })).toMatchObject({ banned: true, retryAfterMs: 700 });
    expect(service.check("api", "alice", { tier: "pro" })).toMatchObject({ banned: true, allowed: false });
    expect(service.check("api", "alice")).toMatchObject({ allowed: true, remaining: 1 });
    expect(service.get("api", "alice", { tier: "pro" })).toMatchObject({ banned: true, retryAfterMs: 700 });
    service.reset("api", "alice");
    expect(service.check("api", "alice", { tier: "pro" })).toMatchObject({ allowed: true, remaining: 9 });
  });
});

/** A ban that never triggers: its slot only ever holds blocks. */
const NEVER = { after: 1_000_000, withinMs: 1, forMs: 1 };

describe("seeded property: a block without a ban answers what the same block in a ban slot answers", () => {
  const op = fc.record({
    dt: fc.integer({ min: 0, max: 900 }),
    call: fc.constantFrom("check", "peek", "refund", "penalty", "block", "get", "reset"),
    cost: fc.integer({ min: 1, max: 2 }),
  });
  it.each(STORES)("%s", (_store, makeStore) => {
    const seed = 2026;
    fc.assert(
      fc.property(fc.constantFrom(...RULES.map(([, s]) => s)), fc.array(op, { maxLength: 30 }), (spec, ops) => {
        const clock = new ManualClock(T0);
        const plain = createLimiter(spec, { clock, store: makeStore() });
        const banned = createLimiter(spec, { clock, store: makeStore(), ban: NEVER });
        for (const o of ops) {
          // dt ≥ 1 around gets: a ban slot counts a denial (cost 2 past a limit) for 1 ms.
          clock.set(clock.now() + o.dt);
          const run = (l: Limiter): unknown =>
            o.call === "check"
              ? l.tryAcquire("k", o.cost)
              : o.call === "peek"
                ? l.peek("k", o.cost)
                : o.call === "refund"
                  ? l.refund("k", o.cost)
                  : o.call === "penalty"
                    ? l.penalty("k", o.cost)
                    : o.call === "block"
                      ? l.block("k", o.cost * 400)
                      : o.call === "reset"
                        ? l.reset("k")
                        : l.peek("k");
          expect(run(plain)).toEqual(run(banned));
        }
      }),
      { seed, numRuns: 300, verbose: true },
    );
  });
});

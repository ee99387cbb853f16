// decideRule at fixed instants: refunds per algorithm (never above the limit), bans, and
// composites (all or nothing), through the public limiter on the in-process store.
import { type Decision, type LimitSpec, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { createLimiter } from "../limiter.ts";
import { bannedDecision } from "./decide-rule.ts";

const INF = Number.POSITIVE_INFINITY;

describe("refund", () => {
  // For each algorithm: take 3 of 3 at t=0, refund 1 at t=10 → one more passes; refunds beyond
  // what was taken never lift the key above its limit.
  const cases: Array<[string, LimitSpec]> = [
    ["fixed-window", { algorithm: "fixed-window", limit: 3, windowMs: 1000 }],
    ["sliding-log", { algorithm: "sliding-log", limit: 3, windowMs: 1000 }],
    ["sliding-window", { algorithm: "sliding-window", limit: 3, windowMs: 1000 }],
    ["token-bucket", { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.001 }],
    ["gcra", { algorithm: "gcra", limit: 3, periodMs: 3_000_000 }],
    ["leaky-bucket", { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 0.001 }],
  ];
  for (const [name, spec] of cases) {
    it(`${name}: gives units back, never above the limit, and returns what peek then says`, () => {
      const clock = new ManualClock(0);
      const limiter = createLimiter(spec, clock);
      for (let i = 0; i < 3; i++) expect(limiter.tryAcquire("k").allowed).toBe(true);
      expect(limiter.tryAcquire("k").allowed).toBe(false);
      clock.set(10);
      const refunded = limiter.refund("k");
      expect(refunded).toEqual(limiter.peek("k"));
      expect(refunded.allowed).toBe(true);
      expect(limiter.tryAcquire("k").allowed).toBe(true);
      expect(limiter.tryAcquire("k").allowed).toBe(false);
      // Refund far more than was ever taken: the key is full, not fuller (a peek of one unit
      // then leaves 2 of 3).
      expect(limiter.refund("k", 100).remaining).toBe(2);
      for (let i = 0; i < 3; i++) expect(limiter.tryAcquire("k").allowed).toBe(true);
      expect(limiter.tryAcquire("k").allowed).toBe(false);
    });
  }

  it("fixed-window: only the current window's units come back", () => {
    const clock = new ManualClock(900);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, clock);
    limiter.tryAcquire("k", 2);
    clock.set(1000);
    limiter.tryAcquire("k", 2);
    expect(limiter.refund("k", 1)).toMatchObject({ allowed: true, remaining: 0 }); // one of two back
    expect(limiter.refund("k", 1).remaining).toBe(1);
  });

  it("sliding-log: the newest entries go first, so the oldest keeps its retry time", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 2, windowMs: 1000 }, clock);
    limiter.tryAcquire("k");
    clock.set(500);
    limiter.tryAcquire("k");
    limiter.refund("k");
    limiter.tryAcquire("k");
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: false, retryAfterMs: 500 });
  });

  it("a composite refunds every member; a refund of an unknown key stores nothing", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter(
      [
        { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
        { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
      ],
      { clock, store },
    );
    limiter.tryAcquire("k", 2);
    const after = limiter.refund("k", 2);
    expect(after.parts?.map((p) => p.remaining)).toEqual([1, 4]); // a peek of one unit, as when new
    expect(limiter.refund("other")).toEqual(limiter.peek("fresh"));
    expect(store.size).toBe(1);
  });

  it("service.refund uses the rule's tier and validates its options", () => {
    const clock = new ManualClock(0);
    const service = new RateLimiterService(clock).addRule(
      "api",
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      { tiers: { pro: { algorithm: "fixed-window", limit: 3, windowMs: 1000 } } },
    );
    service.check("api", "k", { tier: "pro" });
    expect(service.refund("api", "k", { tier: "pro" }).remaining).toBe(2);
    expect(() => service.refund("api", "k", { tire: "pro" } as never)).toThrow(/unknown option `tire`/);
  });
});

describe("ban", () => {
  const spec = { algorithm: "fixed-window", limit: 1, windowMs: 1000 } as const;
  const ban = { after: 3, withinMs: 10_000, forMs: 60_000 };

  it("bans after `after` denials within the span, for `forMs`, then counts afresh", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter(spec, { clock, ban });
    const seen: Array<Partial<Decision>> = [];
    for (let t = 0; t < 5; t++) {
      clock.set(t);
      const d = limiter.tryAcquire("k");
      seen.push({ allowed: d.allowed, retryAfterMs: d.retryAfterMs, ...(d.banned ? { banned: true } : {}) });
    }
    expect(seen).toEqual([
      { allowed: true, retryAfterMs: 0 },
      { allowed: false, retryAfterMs: 999 },
      { allowed: false, retryAfterMs: 998 },
      { allowed: false, retryAfterMs: 60_000, banned: true }, // the third denial starts the ban
      { allowed: false, retryAfterMs: 59_999, banned: true },
    ]);
    expect(limiter.peek("k")).toMatchObject({ banned: true, remaining: 0 });
    clock.set(3 + 60_000);
    expect(limiter.tryAcquire("k")).toEqual({
      allowed: true,
      limit: 1,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 997,
      delayMs: 0,
    });
  });

  it("denials spread wider than `withinMs` never ban", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter(spec, { clock, ban });
    limiter.tryAcquire("k");
    for (const t of [1, 2, 10_001, 10_002]) {
      clock.set(t);
      limiter.tryAcquire("k", 2); // cost > limit: a denial every time
    }
    expect(limiter.peek("k").banned).toBeUndefined();
  });

  it("a composite is banned as a whole and reports its parts", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter([spec, { algorithm: "fixed-window", limit: 10, windowMs: 60_000 }], {
      clock,
      ban: { after: 1, withinMs: 1000, forMs: 5000 },
    });
    limiter.tryAcquire("k");
    const d = limiter.tryAcquire("k");
    expect(d).toMatchObject({ allowed: false, banned: true, retryAfterMs: 5000 });
    expect(d.parts).toHaveLength(2);
  });

  it("rejects a bad ban policy by field", () => {
    expect(() => createLimiter(spec, { ban: { after: 0, withinMs: 1, forMs: 1 } })).toThrow(/ban\.after.*got 0/);
    expect(() => createLimiter(spec, { ban: { after: 1, withinMs: 1, forMs: 1, for: 2 } as never })).toThrow(
      /unknown `ban` option `for`/,
    );
  });
});

describe("composites", () => {
  it("consume nothing when one member denies, and cost > limit is never", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter(
      [
        { algorithm: "token-bucket", capacity: 2, refillPerSecond: 1 },
        { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
      ],
      clock,
    );
    limiter.tryAcquire("k", 2);
    const denied = limiter.tryAcquire("k", 1);
    expect(denied.allowed).toBe(false);
    expect(denied.parts?.[1]).toMatchObject({ allowed: true, remaining: 1 }); // reported unconsumed
    expect(limiter.tryAcquire("k", 5).retryAfterMs).toBe(INF);
    clock.set(1000);
    expect(limiter.tryAcquire("k", 1)).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe("a banned key's figures (never sooner than its members would allow)", () => {
  // Each row: the window, the ban, and what the banning denial must say. The ban is 5 s; when
  // the window still denies for longer (59,999 ms), that is the answer, not the ban's 5,000.
  const rows: Array<[string, number, number, number, number]> = [
    // label, windowMs, forMs, retryAfterMs, resetMs of the banning denial (1 ms after the check)
    ["the window outlasts the ban", 60_000, 5000, 59_999, 59_999],
    ["the ban outlasts the window", 1000, 5000, 5000, 5000],
  ];
  for (const start of [0, 1_800_000_000_000]) {
    for (const [label, windowMs, forMs, retry, reset] of rows) {
      it(`${label} (at ${start})`, () => {
        const clock = new ManualClock(start);
        const limiter = createLimiter(
          { algorithm: "fixed-window", limit: 1, windowMs },
          { clock, ban: { after: 1, withinMs: 1000, forMs } },
        );
        expect(limiter.tryAcquire("k").allowed).toBe(true);
        clock.set(start + 1);
        expect(limiter.tryAcquire("k")).toEqual({
          allowed: false,
          limit: 1,
          remaining: 0,
          retryAfterMs: retry,
          resetMs: reset,
          delayMs: 0,
          banned: true,
        });
        // A client coming back at retryAfterMs passes; 1 ms earlier it does not.
        clock.set(start + 1 + retry - 1);
        expect(limiter.peek("k").allowed).toBe(false);
        clock.set(start + 1 + retry);
        expect(limiter.tryAcquire("k").allowed).toBe(true);
      });
    }
  }

  it("bannedDecision takes the later of the ban's end and the members' own figures", () => {
    const members: Decision = { allowed: false, limit: 3, remaining: 0, retryAfterMs: 700, resetMs: 900, delayMs: 0 };
    expect(bannedDecision(members, 500)).toEqual({ ...members, retryAfterMs: 700, resetMs: 900, banned: true });
    expect(bannedDecision(members, 800)).toEqual({ ...members, retryAfterMs: 800, resetMs: 900, banned: true });
    expect(bannedDecision(members, 1000)).toEqual({ ...members, retryAfterMs: 1000, resetMs: 1000, banned: true });
    // Members that would allow (retry 0) still answer with the ban; remaining is 0 whatever they say.
    const open: Decision = { allowed: true, limit: 3, remaining: 2, retryAfterMs: 0, resetMs: 0, delayMs: 0 };
    expect(bannedDecision(open, 250)).toEqual({
      ...open,
      allowed: false,
      remaining: 0,
      retryAfterMs: 250,
      resetMs: 250,
      banned: true,
    });
  });
});

describe("the ban's span boundary", () => {
  // Denials exactly `withinMs` apart are in different spans (the count restarts), 1 ms less apart in one.
  for (const start of [0, 1_800_000_000_000]) {
    it.each([
      [999, true],
      [1000, false],
      [1001, false],
    ])(`a second denial %i ms after the first bans: %s (at ${start})`, (gap, bans) => {
      const clock = new ManualClock(start);
      const limiter = createLimiter(
        { algorithm: "fixed-window", limit: 1, windowMs: 100_000 },
        { clock, ban: { after: 2, withinMs: 1000, forMs: 50_000 } },
      );
      limiter.tryAcquire("k");
      expect(limiter.tryAcquire("k").banned).toBeUndefined();
      clock.set(start + gap);
      expect(limiter.tryAcquire("k").banned === true).toBe(bans);
      // And the ban lasts exactly forMs from the banning denial.
      if (bans) {
        clock.set(start + gap + 50_000 - 1);
        expect(limiter.peek("k").banned).toBe(true);
        clock.set(start + gap + 50_000);
        expect(limiter.peek("k").banned).toBeUndefined();
      }
    });
  }
});

describe("edges the mutation run found unchecked", () => {
  it("a refund exactly when the ban ends is no longer banned", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 100 },
      { clock, ban: { after: 1, withinMs: 1000, forMs: 500 } },
    );
    limiter.tryAcquire("k");
    expect(limiter.tryAcquire("k").banned).toBe(true); // banned until 500
    clock.set(499);
    expect(limiter.refund("k").banned).toBe(true);
    clock.set(500);
    expect(limiter.refund("k")).toMatchObject({ allowed: true });
    expect(limiter.refund("k").banned).toBeUndefined();
  });

  it("a banned decision of a single member carries no parts property at all", () => {
    const d = bannedDecision({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 7, resetMs: 9, delayMs: 0 }, 5);
    expect("parts" in d).toBe(false);
  });
});

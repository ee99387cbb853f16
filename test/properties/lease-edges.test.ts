// The lease attack's edges at fixed instants (SPEC §16): validation (ConfigError naming the
// field; ArgumentError for a bad receipt), release() idempotent and never another holder's lease
// (two leases of one ms; one renewed, the other released late), a crashed holder's lease expiring
// at today's epoch with leaseMs 1 and leaseMs of years, and bans on a leased rule.
import {
  ArgumentError,
  ConfigError,
  createLimiter,
  type Decision,
  ManualClock,
  MemoryStore,
  RateLimiterService,
} from "sluice";
import { describe, expect, it } from "vitest";

const T = 1_765_000_000_000;
const free = (d: Decision): number => (d.allowed ? d.remaining + 1 : 0);

describe("lease validation", () => {
  it("a bad limit or leaseMs, or an unknown field, is a ConfigError naming the field", () => {
    const bad: Array<[unknown, string]> = [
      [{ algorithm: "concurrency", limit: 1.5 }, "limit"],
      [{ algorithm: "concurrency", limit: -1 }, "limit"],
      [{ algorithm: "concurrency", limit: "2" }, "limit"],
      [{ algorithm: "concurrency", limit: Number.NaN }, "limit"],
      [{ algorithm: "concurrency", limit: Number.POSITIVE_INFINITY }, "limit"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: 0 }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: Number.POSITIVE_INFINITY }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: Number.NaN }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: "1000" }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: null }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, leaseMs: 2 ** 53 }, "leaseMs"],
      [{ algorithm: "concurrency", limit: 2, lease: 1000 }, "lease"],
      [{ algorithm: "concurrency", limit: 2, windowMs: 1000 }, "windowMs"],
    ];
    let checked = 0;
    for (const [spec, field] of bad) {
      for (const build of [
        () => createLimiter(spec as never),
        () => createLimiter([spec, { algorithm: "fixed-window", limit: 5, windowMs: 1000 }] as never),
        () => new RateLimiterService().addRule("r", spec as never),
      ]) {
        let error: unknown;
        try {
          build();
        } catch (e) {
          error = e;
        }
        expect(error, JSON.stringify(spec)).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).field ?? "", JSON.stringify(spec)).toMatch(new RegExp(`${field}$`));
        checked++;
      }
    }
    expect(checked).toBe(bad.length * 3);
  });

  it("release/renew with a bad receipt is an ArgumentError naming what is wrong", () => {
    const limiter = createLimiter({ algorithm: "concurrency", limit: 2 }, new ManualClock(T));
    const bad: Array<[unknown, RegExp]> = [
      [undefined, /takes \{ cost\?, at \}/],
      [null, /takes \{ cost\?, at \}/],
      [T, /takes \{ cost\?, at \}/],
      [[T], /takes \{ cost\?, at \}/],
      [{}, /`at`/],
      [{ at: Number.NaN }, /`at`/],
      [{ at: Number.POSITIVE_INFINITY }, /`at`/],
      [{ at: String(T) }, /`at`/],
      [{ at: T, cost: 0 }, /cost/],
      [{ at: T, cost: -1 }, /cost/],
      [{ at: T, cost: 1.5 }, /cost/],
      [{ at: T, receipt: T }, /unknown .*`receipt`/],
    ];
    let checked = 0;
    for (const [arg, message] of bad) {
      for (const call of ["release", "renew"] as const) {
        expect(() => limiter[call]("k", arg as never), `${call}(${JSON.stringify(arg)})`).toThrow(ArgumentError);
        expect(() => limiter[call]("k", arg as never)).toThrow(message);
        checked++;
      }
    }
    // A rule with no concurrency member holds no leases.
    const rate = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, new ManualClock(T));
    expect(() => rate.release("k", { at: T })).toThrow(ArgumentError);
    expect(() => rate.renew("k", { at: T })).toThrow(/concurrency/);
    expect(checked).toBe(bad.length * 2);
  });
});

describe("release() and renew() of leases of one ms", () => {
  it("release() is idempotent and frees only its own lease, whatever the others did", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter({ algorithm: "concurrency", limit: 3, leaseMs: 1000 }, clock);
    const a = limiter.tryAcquire("k");
    const b = limiter.tryAcquire("k");
    const c = limiter.tryAcquire("k");
    expect([a.at, b.at, c.at]).toEqual([T, T, T]);
    clock.set(T + 400);
    expect((a.renew as () => Decision)().allowed).toBe(true); // a now expires at T+1400
    clock.set(T + 500);
    expect(free((b.release as () => Decision)())).toBe(1);
    // b again, many times: nothing more is freed.
    for (let i = 0; i < 3; i++) (b.release as () => Decision)();
    expect(free(limiter.peek("k"))).toBe(1);
    // c released late, after its lease expired (T+1000): it frees nothing of a's.
    clock.set(T + 1100);
    expect(free(limiter.peek("k"))).toBe(2); // c expired; a still held
    (c.release as () => Decision)();
    expect(free(limiter.peek("k"))).toBe(2);
    expect((a.renew as () => Decision)().allowed).toBe(true);
    // a renewed twice: its release frees it.
    expect(free((a.release as () => Decision)())).toBe(3);
    expect((a.renew as () => Decision)().allowed).toBe(false);
  });
});

describe("a crashed holder's lease expires after leaseMs at today's epoch", () => {
  it.each([
    [1, 1],
    [1, 3],
    [1000, 2],
    [3 * 365 * 86_400_000, 2],
  ])("leaseMs %d, limit %d", (leaseMs, limit) => {
    const clock = new ManualClock(T);
    const limiter = createLimiter({ algorithm: "concurrency", limit, leaseMs }, { clock, store: new MemoryStore() });
    const held: Decision[] = [];
    for (let i = 0; i < limit; i++) held.push(limiter.tryAcquire("k"));
    expect(held.every((d) => d.allowed)).toBe(true);
    const full = limiter.tryAcquire("k");
    expect(full.allowed).toBe(false);
    expect(full.retryAfterMs).toBe(leaseMs);
    clock.set(T + leaseMs - 1);
    expect(limiter.tryAcquire("k").allowed).toBe(false);
    clock.set(T + leaseMs);
    const after = limiter.tryAcquire("k", limit);
    expect(after.allowed).toBe(true);
    // The crashed holders' late releases and renewals change nothing.
    for (const d of held) {
      (d.release as () => Decision)();
      expect((d.renew as () => Decision)().allowed).toBe(false);
    }
    expect(limiter.peek("k").allowed).toBe(false);
  });
});

describe("bans on a leased rule", () => {
  it("a banned key still releases (its slot is free once the ban ends) and renews nothing", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock }).addRule(
      "r",
      { algorithm: "concurrency", limit: 1, leaseMs: 60_000 },
      { ban: { after: 2, withinMs: 1000, forMs: 5000 } },
    );
    const held = service.check("r", "k") as Decision;
    expect(held.allowed).toBe(true);
    expect((service.check("r", "k") as Decision).allowed).toBe(false);
    const banned = service.check("r", "k") as Decision;
    expect(banned.banned).toBe(true);
    clock.advance(10);
    expect((held.renew as () => Decision)().allowed).toBe(false);
    (held.release as () => Decision)();
    expect((service.check("r", "k") as Decision).allowed).toBe(false); // still banned
    clock.set(T + 5000);
    const next = service.check("r", "k") as Decision;
    expect(next.allowed).toBe(true); // the released slot is free
    expect(next.remaining).toBe(0);
  });
});

describe("two concurrency members of different leaseMs", () => {
  it("a renewal moves the lease in every member or in none; a release frees what still counts", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(
      [
        { algorithm: "concurrency", limit: 2, leaseMs: 100 },
        { algorithm: "concurrency", limit: 1, leaseMs: 1000 },
      ],
      clock,
    );
    const d = limiter.tryAcquire("k");
    expect(d.allowed).toBe(true);
    expect(limiter.tryAcquire("k").allowed).toBe(false); // the second member is full
    clock.set(T + 50);
    const renewed = (d.renew as () => Decision)();
    expect([renewed.allowed, renewed.at]).toEqual([true, T + 50]);
    clock.set(T + 160); // the short member's lease expired at T+150; the long one holds
    const late = (d.renew as () => Decision)();
    expect([late.allowed, late.retryAfterMs]).toEqual([false, Number.POSITIVE_INFINITY]);
    expect(limiter.tryAcquire("k").allowed).toBe(false); // nothing moved: the long member still holds it
    (d.release as () => Decision)();
    const next = limiter.tryAcquire("k");
    expect(next.allowed).toBe(true);
    expect(next.parts?.map((p) => p.remaining)).toEqual([1, 0]);
  });
});

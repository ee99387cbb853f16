// The concurrency spec (SPEC §16, issue 33): a lease is a sliding-log entry with windowMs =
// leaseMs. Tables at fixed instants through the public limiter: acquisition and expiry as the
// log has them, then the lease operations (release, renew) and the Decision's own handles.
import { createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { ArgumentError, ConfigError } from "../core/errors.ts";
import { validateSpec } from "../core/spec.ts";
import type { DecisionEvent } from "../limiter.ts";
import { RateLimiterService } from "../service.ts";
import { checkRetryHonest, type Row, runTable } from "./test-support/table.ts";

const INF = Number.POSITIVE_INFINITY;
const T = 1_800_000_000_000;
const spec = (limit: number, leaseMs?: number) =>
  ({ algorithm: "concurrency", limit, ...(leaseMs === undefined ? {} : { leaseMs }) }) as const;

/** [allowed, remaining, retryAfterMs, resetMs] of a decision. */
const figures = (d: Decision) => [d.allowed, d.remaining, d.retryAfterMs, d.resetMs];

/**
 * Free slots of `key` now. A peek of one unit says what a check would (`remaining` after taking
 * it), so the free slots are one more when it would pass, and none when it would not.
 */
const free = (limiter: { peek(key: string): Decision | Promise<Decision> }, key: string): number => {
  const d = limiter.peek(key) as Decision;
  return d.allowed ? d.remaining + 1 : 0;
};

describe("concurrency: the sliding-log step over leases", () => {
  it("counts leases until they expire: remaining is free slots, retryAfterMs the oldest lease's expiry", () => {
    const clock = new ManualClock();
    const limiter = createLimiter(spec(3, 1000), clock);
    const rows: Row[] = [
      [0, "a", 1, true, 2, 0, 1000],
      [100, "a", 1, true, 1, 0, 1000],
      [200, "a", 1, true, 0, 0, 1000],
      [300, "a", 1, false, 0, 700, 900], // the oldest lease (0) expires at 1000
      [300, "a", 2, false, 0, 800, 900],
      [999, "a", 1, false, 0, 1, 201],
      [1000, "a", 1, true, 0, 0, 1000], // exactly leaseMs old: expired, its slot is free
      [1000, "a", 4, false, 0, INF, 1000], // more than the limit: never
      [1000, "b", 3, true, 0, 0, 1000], // keys are independent
      [500, "a", 1, false, 0, 600, 1500], // the clock stepped back: no time passed since 1000
    ];
    runTable(limiter, clock, 3, rows);
    clock.set(1050);
    checkRetryHonest(limiter, clock, "a", 1);
  });

  it("leaseMs defaults to 60 s and is filled in: one spec, one identity; validation names the field", () => {
    expect(validateSpec({ algorithm: "concurrency", limit: 2 })).toEqual({
      algorithm: "concurrency",
      limit: 2,
      leaseMs: 60_000,
    });
    const clock = new ManualClock(T);
    const store = new MemoryStore();
    const a = createLimiter(spec(2), { clock, store, name: "x" });
    const b = createLimiter(spec(2, 60_000), { clock, store, name: "x" });
    a.tryAcquire("k");
    expect(free(b, "k")).toBe(1);
    expect(a.tryAcquire("k").resetMs).toBe(60_000);
    const bad: Array<[unknown, string, RegExp]> = [
      [{ algorithm: "concurrency", limit: 0 }, "limit", /limit must be a positive integer \(got 0\)/],
      [{ algorithm: "concurrency", limit: 2 ** 53 }, "limit", /limit must be a positive integer/],
      [
        { algorithm: "concurrency", limit: 1, leaseMs: 1.5 },
        "leaseMs",
        /leaseMs must be a positive integer \(got 1.5\)/,
      ],
      [{ algorithm: "concurrency", limit: 1, leaseMs: -1 }, "leaseMs", /leaseMs must be a positive integer/],
      [{ algorithm: "concurrency", limit: 1, windowMs: 10 }, "windowMs", /unknown field `windowMs` for concurrency/],
      [{ algorithm: "concurrency" }, "limit", /limit must be a positive integer \(got undefined\)/],
    ];
    for (const [input, field, message] of bad) {
      let error: unknown;
      try {
        validateSpec(input);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(input)).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
      expect((error as Error).message).toMatch(message);
    }
    expect(() => validateSpec({ algorithm: "concurency", limit: 1 })).toThrow(/"concurrency"/);
  });

  it("its shape is its own: a sliding log of the same window under the same name starts fresh", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock });
    service.addRule("r", { algorithm: "sliding-log", limit: 2, windowMs: 1000 });
    service.check("r", "k");
    service.updateRule("r", spec(2, 1000));
    expect(service.peek("r", "k").remaining).toBe(1); // a fresh key: 2 free, 1 after this one
  });
});

describe("concurrency: release and renew at fixed instants", () => {
  it("release frees exactly the lease of its receipt, once; an expired lease frees nothing", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec(3, 1000), clock);
    const a = limiter.tryAcquire("k"); // T
    clock.set(T + 100);
    limiter.tryAcquire("k");
    clock.set(T + 200);
    limiter.tryAcquire("k");
    expect(a.at).toBe(T);
    clock.set(T + 300);
    // What a peek of one unit then says (as a refund answers): one slot free, taking it leaves 0.
    expect(figures(limiter.release("k", { at: T }))).toEqual([true, 0, 0, 1000]);
    expect(free(limiter, "k")).toBe(1);
    // The same receipt again: nothing left at T, nothing else is freed.
    limiter.release("k", { at: T });
    expect(free(limiter, "k")).toBe(1);
    // A receipt naming no lease frees nothing.
    limiter.release("k", { at: T + 150 });
    expect(free(limiter, "k")).toBe(1);
    // The lease of T+100 expired at T+1100: releasing it then frees nobody else's.
    clock.set(T + 1150);
    const c = limiter.tryAcquire("k"); // T+1150; only T+200 still counts besides it
    expect(c.remaining).toBe(1);
    limiter.release("k", { at: T + 100 });
    expect(free(limiter, "k")).toBe(1);
    limiter.release("k", { at: T + 1150 });
    expect(free(limiter, "k")).toBe(2);
  });

  it("release gives back `cost` leases of its instant, never more than it names", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec(5, 1000), clock);
    limiter.tryAcquire("k", 3);
    limiter.tryAcquire("k"); // same instant: 4 leases at T
    limiter.release("k", { cost: 2, at: T });
    expect(free(limiter, "k")).toBe(3);
    limiter.release("k", { cost: 9, at: T });
    expect(free(limiter, "k")).toBe(5);
  });

  it("renew moves the lease to now: it outlives its first expiry, and only the new receipt releases it", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec(2, 1000), clock);
    limiter.tryAcquire("k");
    clock.set(T + 900);
    const r = limiter.renew("k", { at: T });
    expect(figures(r)).toEqual([true, 1, 0, 1000]);
    expect(r.at).toBe(T + 900);
    clock.set(T + 1500); // the first expiry has passed: still held
    expect(free(limiter, "k")).toBe(1);
    limiter.release("k", { at: T }); // the old receipt names nothing now
    expect(free(limiter, "k")).toBe(1);
    limiter.release("k", { at: T + 900 });
    expect(free(limiter, "k")).toBe(2);
  });

  it("renewing a lease no longer held changes nothing and is denied, retryAfterMs Infinity", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec(2, 1000), clock);
    limiter.tryAcquire("k");
    clock.set(T + 10);
    limiter.tryAcquire("k");
    clock.set(T + 1000); // the first lease expired exactly now
    expect(figures(limiter.renew("k", { at: T }))).toEqual([false, 1, INF, 10]);
    expect(free(limiter, "k")).toBe(1);
    limiter.release("k", { at: T + 10 });
    expect(figures(limiter.renew("k", { at: T + 10 }))).toEqual([false, 2, INF, 0]);
    // More leases than the receipt holds: none moves.
    clock.set(T + 2000);
    limiter.tryAcquire("k");
    expect(limiter.renew("k", { cost: 2, at: T + 2000 }).allowed).toBe(false);
    clock.set(T + 2999);
    expect(free(limiter, "k")).toBe(1);
  });

  it("the Decision's release() acts once; renew() keeps the receipt release() uses", () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec(3, 1000), clock);
    const d1 = limiter.tryAcquire("k");
    const d2 = limiter.tryAcquire("k"); // same ms: interchangeable leases
    expect(typeof d1.release).toBe("function");
    expect(Object.keys(d1)).not.toContain("release"); // decisions compare and print as before
    const first = (d1.release as () => Decision)();
    expect(first.remaining).toBe(1);
    expect((d1.release as () => Decision)()).toBe(first); // the first call's answer
    expect(free(limiter, "k")).toBe(2); // d2's lease is still held
    // A renewal after the release is refused without touching d2's lease of the same instant.
    expect(figures((d1.renew as () => Decision)())).toEqual([false, 1, INF, 1000]);
    clock.set(T + 800);
    expect((d2.renew as () => Decision)().at).toBe(T + 800);
    clock.set(T + 1500);
    expect(free(limiter, "k")).toBe(2);
    (d2.release as () => Decision)();
    expect(free(limiter, "k")).toBe(3);
  });

  it("denied decisions, and rules without a concurrency member, carry no handles; their limiters refuse release", () => {
    const clock = new ManualClock(T);
    const leases = createLimiter(spec(1, 1000), clock);
    expect(leases.tryAcquire("k").release).toBeTypeOf("function");
    expect(leases.tryAcquire("k").release).toBeUndefined();
    const rate = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: 1000 }, clock);
    expect(rate.tryAcquire("k").release).toBeUndefined();
    expect(() => rate.release("k", { at: T })).toThrow(ArgumentError);
    expect(() => rate.release("k", { at: T })).toThrow(/release needs a rule with a concurrency member/);
    expect(() => leases.release("k", {} as { at: number })).toThrow(/release `at` must be a finite instant/);
    expect(() => leases.renew("k", { at: T, cost: 0 })).toThrow(/cost must be a positive integer/);
    expect(() => leases.renew("k", { at: T, ttl: 5 } as { at: number })).toThrow(/unknown renew option `ttl`/);
  });

  it("composites: all or nothing (a refused composite holds no lease); release leaves rate members alone", () => {
    const clock = new ManualClock(T);
    const store = new MemoryStore();
    const members = [spec(2, 10_000), { algorithm: "fixed-window", limit: 3, windowMs: 1000 }] as const;
    const limiter = createLimiter([...members], { clock, store, name: "c" });
    // Free slots and free units, member by member, from a peek's parts: of one unit each when
    // the composite would pass, of none (as they stand) for the members that pass when it would not.
    const free2 = () => {
      const d = limiter.peek("k");
      return (d.parts as Decision[]).map((p) => (!p.allowed ? 0 : d.allowed ? p.remaining + 1 : p.remaining));
    };
    const a = limiter.tryAcquire("k");
    const b = limiter.tryAcquire("k");
    expect(limiter.tryAcquire("k").allowed).toBe(false); // no free slot: the window is not charged
    expect(free2()).toEqual([0, 1]);
    (a.release as () => Decision)();
    expect(free2()).toEqual([1, 1]);
    limiter.tryAcquire("k"); // the window is now full (3)
    (b.release as () => Decision)();
    const refused = limiter.tryAcquire("k"); // a free slot, but the rate refuses: no lease taken
    expect(refused.allowed).toBe(false);
    expect(refused.release).toBeUndefined();
    expect(free2()).toEqual([1, 0]);
    // A renewal takes nothing from the rate member, even when it is full.
    const held = limiter.peek("k");
    expect(held.allowed).toBe(false);
    clock.set(T + 500);
    const last = limiter.renew("k", { at: T });
    expect(last.allowed).toBe(true);
    expect(last.parts?.map((p) => p.remaining)).toEqual([1, 0]); // cost 0: free slots, free units
  });

  it("acquire() waits for a free slot and its decision holds a lease; onDecision reports release and renew", async () => {
    const clock = new ManualClock(T);
    const events: DecisionEvent[] = [];
    const limiter = createLimiter(spec(1, 1000), { clock, onDecision: (e) => events.push(e) });
    const first = await limiter.acquire("k");
    expect(first.release).toBeTypeOf("function");
    (first.renew as () => Decision)();
    (first.release as () => Decision)();
    const second = await limiter.acquire("k", { maxWaitMs: 0 });
    expect(second.at).toBe(T);
    expect(second.release).toBeTypeOf("function");
    expect(events.map((e) => e.op)).toEqual(["check", "renew", "release", "check"]);
  });

  it("the service releases and renews by rule and tier", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock });
    service.addRule("jobs", spec(1, 1000), { tiers: { pro: spec(2, 1000) } });
    const d = service.check("jobs", "k", { tier: "pro" });
    expect(service.peek("jobs", "k", { tier: "pro" }).remaining).toBe(0);
    clock.set(T + 100);
    expect(service.renew("jobs", "k", { tier: "pro", at: d.at as number }).at).toBe(T + 100);
    expect(service.release("jobs", "k", { tier: "pro", at: T + 100 }).remaining).toBe(1);
    expect(() => service.release("jobs", "k", { at: T, tier: "gold" })).toThrow(/unknown tier/);
  });

  it("past maxKeys a summarised lease is conservative: it counts until it expires, never less", () => {
    const clock = new ManualClock(T);
    const store = new MemoryStore({ maxKeys: 4 });
    const limiter = createLimiter(spec(2, 1000), { clock, store });
    const held = new Map<string, Decision>();
    for (let i = 0; i < 200; i++) held.set(`k${i}`, limiter.tryAcquire(`k${i}`));
    for (const [key, d] of held) {
      (d.release as () => Decision)();
      // Released, or still counted (summarised): never more than the limit free, never less than one.
      const slots = free(limiter, key);
      expect(slots, key).toBeGreaterThanOrEqual(1);
      expect(slots, key).toBeLessThanOrEqual(2);
    }
    clock.set(T + 1000);
    for (const key of held.keys()) expect(free(limiter, key), key).toBe(2);
  });
});

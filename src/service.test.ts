import {
  ArgumentError,
  ConfigError,
  DuplicateRuleError,
  ManualClock,
  MemoryStore,
  RateLimiterService,
  UnknownRuleError,
} from "sluice";
import { describe, expect, it } from "vitest";

const perSecond = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 1000 }) as const;

describe("RateLimiterService", () => {
  it("keeps rules and keys apart", () => {
    const service = new RateLimiterService(new ManualClock());
    service.addRule("search", perSecond(1)).addRule("login", perSecond(1));
    expect(service.check("search", "u").allowed).toBe(true);
    expect(service.check("search", "u").allowed).toBe(false);
    expect(service.check("login", "u").allowed).toBe(true);
    expect(service.check("search", "v").allowed).toBe(true);
    expect(service.rules().map((r) => r.name)).toEqual(["search", "login"]);
  });

  it("rejects bad names, duplicates, unknown rules and invalid specs with typed errors", () => {
    const service = new RateLimiterService();
    expect(() => service.addRule("", perSecond(1))).toThrow(ArgumentError);
    service.addRule("a", perSecond(1));
    expect(() => service.addRule("a", perSecond(2))).toThrow(DuplicateRuleError);
    expect(() => service.check("b", "k")).toThrow(UnknownRuleError);
    expect(() => service.peek("b", "k")).toThrow(UnknownRuleError);
    expect(() => service.reset("b", "k")).toThrow(UnknownRuleError);
    expect(() => service.updateRule("b", perSecond(1))).toThrow(UnknownRuleError);
    expect(() => service.addRule("c", { algorithm: "fixed-window", limit: 0, windowMs: 1 })).toThrow(ConfigError);
    expect(() => service.addRule("c", { algorithm: "fixed-window", limit: 0, windowMs: 1 })).toThrow(
      /rule "c".*limit must be a positive integer \(got 0\)/,
    );
    expect(service.hasRule("c")).toBe(false);
  });

  it("tiers: each tier has its own spec and state; unknown tiers are ArgumentErrors", () => {
    const service = new RateLimiterService(new ManualClock());
    service.addRule("api", perSecond(1), { tiers: { pro: perSecond(3) } });
    expect(service.check("api", "k").allowed).toBe(true);
    expect(service.check("api", "k").allowed).toBe(false);
    expect(service.check("api", "k", { tier: "pro" })).toMatchObject({ allowed: true, limit: 3, remaining: 2 });
    expect(() => service.check("api", "k", { tier: "gold" })).toThrow(ArgumentError);
    expect(() => service.check("api", "k", { tier: "gold" })).toThrow(/^unknown tier "gold" for rule "api"$/);
    expect(service.check("api", "k", { tier: "pro", cost: 2 })).toMatchObject({ allowed: true, remaining: 0 });
    service.reset("api", "k");
    expect(service.peek("api", "k").allowed).toBe(true);
    expect(service.peek("api", "k", { tier: "pro" }).remaining).toBe(2);
  });

  it("updateRule applies to later calls and keeps state that still fits", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store });
    service.addRule("api", perSecond(2));
    service.check("api", "k");
    service.check("api", "k");
    expect(service.check("api", "k").allowed).toBe(false);
    // A raised limit keeps today's count: one more fits, not three.
    service.updateRule("api", perSecond(3));
    expect(service.check("api", "k")).toMatchObject({ allowed: true, limit: 3, remaining: 0 });
    expect(service.check("api", "k").allowed).toBe(false);
    // A lowered limit never reports negative remaining.
    service.updateRule("api", perSecond(1));
    expect(service.peek("api", "k")).toMatchObject({ allowed: false, remaining: 0 });
    // A different algorithm starts fresh. The old records stay until they are fresh (as Redis
    // keys stay until they expire), so changing back within the window finds them again.
    service.updateRule("api", { algorithm: "token-bucket", capacity: 2, refillPerSecond: 1 });
    expect(service.check("api", "k")).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.size).toBe(2);
    service.updateRule("api", perSecond(1));
    expect(service.check("api", "k").allowed).toBe(false);
    // Once fresh, they are dropped by a sweep (every 4096 checks).
    clock.set(5000);
    for (let i = 0; i < 4096; i++) service.peek("api", "k");
    expect(store.size).toBe(0);
  });

  it("an invalid update changes nothing", () => {
    const service = new RateLimiterService(new ManualClock());
    service.addRule("api", perSecond(1));
    service.check("api", "k");
    expect(() => service.updateRule("api", perSecond(5), { tiers: { pro: { algorithm: "nope" } as never } })).toThrow(
      ConfigError,
    );
    expect(service.check("api", "k")).toMatchObject({ allowed: false, limit: 1 });
  });

  it("removeRule forgets the rule and says whether it existed", () => {
    const service = new RateLimiterService();
    service.addRule("a", perSecond(1));
    expect(service.removeRule("a")).toBe(true);
    expect(service.removeRule("a")).toBe(false);
    expect(() => service.check("a", "k")).toThrow(UnknownRuleError);
    service.addRule("a", perSecond(1));
    expect(service.check("a", "k").allowed).toBe(true);
  });

  it("composite rules: two pings per second and 100 per minute, all or nothing", () => {
    const clock = new ManualClock(0);
    const service = new RateLimiterService(clock);
    service.addRule("ping", [
      { algorithm: "sliding-log", limit: 2, windowMs: 1000 },
      { algorithm: "sliding-window", limit: 100, windowMs: 60_000 },
    ]);
    let allowed = 0;
    for (let t = 0; t < 60_000; t += 100) {
      clock.set(t);
      if (service.check("ping", "u").allowed) allowed++;
    }
    // Two per second for 60 s is 120, capped at 100 per minute.
    expect(allowed).toBe(100);
  });

  it("updateRule without options keeps the tiers; rule names must be strings", () => {
    const service = new RateLimiterService(new ManualClock());
    service.addRule("api", perSecond(1), { tiers: { pro: perSecond(3) } });
    service.updateRule("api", perSecond(2));
    const pro = service.check("api", "k", { tier: "pro" });
    expect(pro).toMatchObject({ allowed: true, limit: 3 });
    expect(pro.parts).toBeUndefined(); // still a single spec, not a one-member composite
    service.updateRule("api", perSecond(2), { tiers: {} });
    expect(() => service.check("api", "k", { tier: "pro" })).toThrow(ArgumentError);
    expect(() => service.check(5 as never, "k")).toThrow(ArgumentError);
  });
});

describe("RateLimiterService identity and options", () => {
  it("refuses options that belong elsewhere or do not exist, by name", () => {
    expect(() => new RateLimiterService({ name: "x" } as never)).toThrow(/unknown option `name`/);
    expect(() => new RateLimiterService({ ban: { after: 1, withinMs: 1, forMs: 1 } } as never)).toThrow(
      /unknown option `ban`/,
    );
    const service = new RateLimiterService(new ManualClock(0));
    expect(() => service.addRule("a", perSecond(1), { tier: {} } as never)).toThrow(/unknown option `tier`/);
    expect(service.hasRule("a")).toBe(false);
    service.addRule("a", perSecond(1));
    expect(() => service.check("a", "k", { costs: 2 } as never)).toThrow(/unknown option `costs`/);
  });

  it("keeps a tier named __proto__ as an ordinary tier", () => {
    const service = new RateLimiterService(new ManualClock(0));
    const tiers = JSON.parse('{"__proto__": {"algorithm": "fixed-window", "limit": 3, "windowMs": 1000}}');
    service.addRule("a", perSecond(1), { tiers });
    expect(Object.keys(service.getRule("a")?.tiers ?? {})).toEqual(["__proto__"]);
    expect(service.check("a", "k", { tier: "__proto__" }).remaining).toBe(2);
  });

  it("a service rule and a limiter named like its internal id never share state", async () => {
    const { createLimiter } = await import("sluice");
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store }).addRule("api", perSecond(1));
    const impostor = createLimiter(perSecond(1), { clock, store, name: "rule:api" });
    expect(impostor.tryAcquire("k").allowed).toBe(true);
    expect(service.check("api", "k").allowed).toBe(true);
  });
});

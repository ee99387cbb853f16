import { ArgumentError, createLimiter, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const fixed = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;

describe("MemoryStore: fresh state is dropped without changing decisions", () => {
  it("drops keys whose state is equivalent to a fresh key, with no timer", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter(fixed, { clock, store });
    for (let i = 0; i < 1000; i++) limiter.tryAcquire(`k${i}`);
    expect(store.size).toBe(1000);
    // Two horizons later, any access rotates the generations: the idle keys are gone.
    clock.set(2000);
    limiter.tryAcquire("other");
    clock.set(3000);
    limiter.tryAcquire("other");
    expect(store.size).toBe(1);
  });

  it("keeps a key that is still limited, however long the horizon", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 1, windowMs: 10_000 }, { clock, store });
    expect(limiter.tryAcquire("a").allowed).toBe(true);
    for (let t = 1000; t < 10_000; t += 1000) {
      clock.set(t);
      limiter.tryAcquire(`noise${t}`);
      expect(limiter.peek("a").allowed).toBe(false);
    }
    clock.set(10_000);
    expect(limiter.tryAcquire("a").allowed).toBe(true);
  });

  it("memory stays bounded by the keys active within the horizon", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 5 }, { clock, store });
    let peak = 0;
    // 100 new keys per 100 ms for 60 s: a flood of one-off keys.
    for (let t = 0; t < 60_000; t += 100) {
      clock.set(t);
      for (let i = 0; i < 100; i++) limiter.tryAcquire(`${t}:${i}`);
      peak = Math.max(peak, store.size);
    }
    // The horizon is 1 s: at most ~2 horizons of keys (2 × 1000) are ever held.
    expect(peak).toBeLessThanOrEqual(2100);
  });
});

describe("MemoryStore maxKeys", () => {
  it("rejects a bad maxKeys with a typed error", () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(ArgumentError);
    expect(() => new MemoryStore({ maxKeys: 1.5 })).toThrow(/maxKeys.*1\.5/);
  });

  it("is a hard cap that evicts the least recently used idle state and counts it", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 3 });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: 60_000 }, { clock, store });
    for (const k of ["a", "b", "c", "d", "e"]) limiter.tryAcquire(k);
    expect(store.size).toBe(3);
    expect(store.evicted).toBe(2);
    expect(store.stats()).toMatchObject({ keys: 3, evicted: 2, maxKeys: 3 });
  });

  it("never resets a currently limited key because of a flood of new keys", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 10 });
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 60_000 }, { clock, store });
    for (let i = 0; i < 3; i++) limiter.tryAcquire("attacker-target");
    expect(limiter.tryAcquire("attacker-target").allowed).toBe(false);
    for (let i = 0; i < 10_000; i++) limiter.tryAcquire(`flood${i}`);
    expect(limiter.peek("attacker-target").allowed).toBe(false);
    expect(store.size).toBeLessThanOrEqual(10);
  });

  it("refuses new keys (fail closed) when every stored key is limited", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 2 });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { clock, store });
    limiter.tryAcquire("a");
    limiter.tryAcquire("b");
    const refused = limiter.tryAcquire("c") as Decision;
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(1000);
    expect(store.refused).toBe(1);
    expect(limiter.peek("a").allowed).toBe(false);
    clock.set(1000);
    expect(limiter.tryAcquire("c").allowed).toBe(true);
  });

  it("composites make room for all members before committing any", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 3 });
    const spec = [
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
    ] as const;
    const limiter = createLimiter(spec, { clock, store });
    limiter.tryAcquire("a"); // two records, both members
    const second = limiter.tryAcquire("b"); // needs two more records: "a" member 0 is limited
    expect(store.size).toBeLessThanOrEqual(3);
    if (!second.allowed) {
      // Refused as a whole: nothing of "b" was consumed.
      expect(limiter.peek("b").parts?.[1]?.remaining).toBe(4);
    }
  });
});

describe("MemoryStore shared by several rules", () => {
  it("keeps rules apart and frees a removed rule's state", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store });
    service.addRule("a", fixed).addRule("b", fixed);
    service.check("a", "k");
    service.check("a", "k");
    expect(service.check("a", "k").allowed).toBe(false);
    expect(service.check("b", "k").allowed).toBe(true);
    expect(store.size).toBe(2);
    service.removeRule("a");
    expect(store.size).toBe(1);
  });
});

describe("MemoryStore frees rules nobody calls any more", () => {
  it("an idle rule's fresh state is dropped while other rules are busy", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const idle = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: 1000 }, { clock, store, name: "idle" });
    const busy = createLimiter(
      { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
      { clock, store, name: "busy" },
    );
    for (let i = 0; i < 10_000; i++) idle.tryAcquire(`k${i}`);
    expect(store.size).toBe(10_000);
    // Only the busy rule is called from now on; a few thousand checks later the idle rule's
    // state (fresh after 2 s) is gone.
    for (let t = 1000; t <= 4000; t += 1000) {
      clock.set(t);
      for (let i = 0; i < 5000; i++) busy.tryAcquire("one");
    }
    expect(store.size).toBe(1);
    expect(idle.peek("k1").remaining).toBe(4);
  });
});

describe("MemoryStore shared by limiters on different clocks", () => {
  it("sweeps and evictions triggered on one clock never judge state kept on another", () => {
    const store = new MemoryStore({ maxKeys: 50 });
    const manual = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      {
        clock: new ManualClock(0),
        store,
        name: "manual",
      },
    );
    const real = createLimiter(
      { algorithm: "fixed-window", limit: 1_000_000, windowMs: 1000 },
      { store, name: "real" },
    );
    expect(manual.tryAcquire("k").allowed).toBe(true);
    // Real time is ~1.7e12 ms: on that clock the manual key would look long fresh.
    for (let i = 0; i < 10_000; i++) real.tryAcquire(`r${i % 40}`);
    for (let i = 0; i < 100; i++) real.tryAcquire(`new${i}`);
    expect(manual.tryAcquire("k").allowed).toBe(false);
  });
});

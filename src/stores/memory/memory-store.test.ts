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
    // What stats() reports for an uncapped store is accepted back as "no cap".
    const uncapped = new MemoryStore({ maxKeys: Number.POSITIVE_INFINITY });
    expect(uncapped.stats().maxKeys).toBe(new MemoryStore().stats().maxKeys);
    expect(() => new MemoryStore({ maxKeys: Number.NEGATIVE_INFINITY })).toThrow(ArgumentError);
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

  it("past the cap, an evicted key stays exact in the compact tier", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 2, seed: 1 });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { clock, store });
    limiter.tryAcquire("a");
    limiter.tryAcquire("b");
    const c = limiter.tryAcquire("c") as Decision;
    expect(c).toMatchObject({ allowed: true });
    expect(c.approximate).toBeUndefined();
    const a = limiter.tryAcquire("a") as Decision; // "a" went to the compact tier: exact
    expect(a).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    expect(a.approximate).toBeUndefined();
    expect(store.stats()).toMatchObject({ keys: 2, evicted: 2, compactKeys: 1, approximate: 0 });
  });

  it("never refuses a new key: past the budget, evicted state is summarised and read back over-counted", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 2, maxBytes: 150, seed: 1 }); // no room for a compact tier (one bucket: 128 bytes)
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { clock, store });
    limiter.tryAcquire("a");
    limiter.tryAcquire("b");
    const c = limiter.tryAcquire("c") as Decision;
    expect(c.allowed).toBe(true); // "a" went into the summary; "c" has empty cells: exact
    expect(c.approximate).toBeUndefined();
    const a = limiter.tryAcquire("a") as Decision;
    expect(a).toMatchObject({ allowed: false, approximate: true, retryAfterMs: 1000 });
    expect(store.stats()).toMatchObject({ keys: 2, evicted: 1, compactKeys: 0, approximate: 1, refused: 1 });
    clock.set(1000);
    expect(limiter.tryAcquire("a").allowed).toBe(true);
  });

  it("keeps a composite's members in one record: a flood evicts them together and neither escapes", () => {
    const clock = new ManualClock(0);
    // Seeded: which flood keys share the victim's summary cells depends on the hash seed.
    const store = new MemoryStore({ maxKeys: 3, seed: 7 });
    // The README's login rule: 5 per minute and 20 per hour.
    const spec = [
      { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
      { algorithm: "sliding-log", limit: 20, windowMs: 3_600_000 },
    ] as const;
    const limiter = createLimiter(spec, { clock, store });
    let admitted = 0;
    for (let minute = 0; minute < 60; minute++) {
      clock.set(minute * 60_000);
      for (let i = 0; i < 10; i++) {
        if (limiter.tryAcquire("victim").allowed) admitted++;
        for (let f = 0; f < 5; f++) limiter.tryAcquire(`flood-${minute}-${i}-${f}`);
      }
    }
    // Never more than the hour's 20 (the members leave together); a summarised record may be
    // over-counted by the flood sharing its cells, never under-counted.
    expect(admitted).toBeLessThanOrEqual(20);
    expect(admitted).toBeGreaterThanOrEqual(15);
    expect(store.size).toBeLessThanOrEqual(3);
    expect(store.evicted).toBeGreaterThan(1000);
  });

  it("a key one short of its limit cannot be reset by a flood (sliding log, 5 per minute)", () => {
    const clock = new ManualClock(1_000);
    const store = new MemoryStore({ maxKeys: 10 });
    const limiter = createLimiter({ algorithm: "sliding-log", limit: 5, windowMs: 60_000 }, { clock, store });
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      clock.advance(1);
      if (limiter.tryAcquire("target").allowed) admitted++;
      for (let f = 0; f < 20; f++) limiter.tryAcquire(`flood${i}-${f}`);
    }
    expect(admitted).toBe(5);
  });

  it("shares capacity fairly: one rule's flood pushes out its own records, not another rule's", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 100 });
    const service = new RateLimiterService({ clock, store });
    const spec = { algorithm: "fixed-window", limit: 3, windowMs: 60_000 } as const;
    service.addRule("search", spec).addRule("login", spec);
    for (let i = 0; i < 20; i++) service.check("login", `user${i}`);
    for (let i = 0; i < 10_000; i++) service.check("search", `bot${i}`);
    for (let i = 0; i < 20; i++) {
      const d = service.check("login", `user${i}`);
      expect(d.approximate).toBeUndefined();
      expect(d.remaining).toBe(1);
    }
    expect(store.size).toBe(100);
  });

  it("reset is exact even for a key read back from the sketch", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 1 });
    const limiter = createLimiter({ algorithm: "gcra", limit: 1, periodMs: 60_000 }, { clock, store });
    limiter.tryAcquire("a");
    limiter.tryAcquire("b"); // "a" is summarised
    limiter.reset("a");
    expect(limiter.tryAcquire("a")).toMatchObject({ allowed: true });
  });

  it("rejects unknown options by name", () => {
    expect(() => new MemoryStore({ maxkeys: 5 } as never)).toThrow(/unknown option `maxkeys`/);
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
    // A removed rule's records stay until they are fresh (as Redis keys until they expire):
    // removed and added back within its window, the rule finds its state again.
    service.removeRule("a");
    service.addRule("a", fixed);
    expect(service.check("a", "k").allowed).toBe(false);
    service.removeRule("a");
    expect(store.size).toBe(2);
    // Fresh by then, they are dropped by the next sweep (every 4096 checks), table and all.
    clock.set(10_000);
    for (let i = 0; i < 4096; i++) service.peek("b", "k");
    expect(store.size).toBe(0);
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

describe("MemoryStore after a spec change within one shape", () => {
  it("a shorter horizon (a GCRA's lowered burst) never drops a record before it is fresh", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store });
    const short = { algorithm: "gcra", limit: 10, periodMs: 10_000, burst: 1 } as const; // horizon 1 s
    service.addRule("api", short);
    service.check("api", "other"); // the table's first rotation is due at 1 s
    service.updateRule("api", { algorithm: "gcra", limit: 10, periodMs: 10_000 }); // burst 10: horizon 10 s
    for (let i = 0; i < 10; i++) service.check("api", "k"); // tat = 10 s
    service.updateRule("api", short);
    for (let t = 500; t <= 5000; t += 500) {
      clock.set(t);
      service.check("api", "other"); // rotations of the table happen here
    }
    // 5 s of backlog left, plus this request, against a tolerance of 1 s: still denied, 5 s to wait.
    expect(service.check("api", "k")).toMatchObject({ allowed: false, retryAfterMs: 5000 });
  });
});

describe("MemoryStore releases", () => {
  it("a released table on a clock no live binding uses is dropped at once (nothing would sweep it)", () => {
    const store = new MemoryStore();
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
      {
        clock: new ManualClock(0),
        store,
        name: "once",
      },
    );
    for (let i = 0; i < 100; i++) limiter.tryAcquire(`k${i}`);
    expect(store.size).toBe(100);
    limiter.close();
    expect(store.size).toBe(0);
  });

  it("a released table other bindings share a clock with goes one horizon after its release, not at a sweep", () => {
    // Envoy overrides add and remove a rule per distinct limit: the removed ones must not pile up.
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    const store = new MemoryStore();
    const service = new RateLimiterService({ clock, store });
    service.addRule("kept", fixed);
    service.check("kept", "k");
    for (let i = 0; i < 50; i++) {
      service.addRule(`r${i}`, fixed);
      service.check(`r${i}`, "k");
      service.check(`r${i}`, "k");
      service.removeRule(`r${i}`);
    }
    expect(store.size).toBe(51); // removed rules keep their counts within the horizon
    service.addRule("r0", fixed);
    expect(service.check("r0", "k").allowed).toBe(false); // and a rule added back finds them
    service.removeRule("r0");
    clock.advance(1000); // one horizon (a window) after the releases: every removed count is fresh
    service.addRule("next", fixed);
    service.removeRule("next"); // a release drops the quiet tables released before it
    expect(store.size).toBe(1);
    const ids = (JSON.parse(store.snapshot()).tables as Array<{ id: string }>).map((t) => t.id);
    expect(ids).toEqual(["rule:kept", "rule:next"]); // "next" goes one horizon after its own release
  });
});

describe("MemoryStore sketches after a spec change within one shape", () => {
  it("a raised sliding-log limit applies to what the sketch joins and reads back", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 1 });
    const service = new RateLimiterService({ clock, store });
    service.addRule("api", { algorithm: "sliding-log", limit: 2, windowMs: 60_000 });
    service.check("api", "x");
    service.check("api", "y"); // the sketch exists now, built under limit 2
    service.updateRule("api", { algorithm: "sliding-log", limit: 10, windowMs: 60_000 });
    let admitted = 0;
    for (let i = 0; i < 10; i++) if (service.check("api", "a").allowed) admitted++;
    service.check("api", "b"); // "a" (10 entries) goes into the sketch
    for (let i = 0; i < 10; i++) if (service.check("api", "a").allowed) admitted++;
    expect(admitted).toBe(10);
  });
});

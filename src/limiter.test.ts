import { ArgumentError, ConfigError, createLimiter, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const fixed = { algorithm: "fixed-window", limit: 2, windowMs: 1000 } as const;

describe("createLimiter", () => {
  it("accepts a Clock or an options object", () => {
    const clock = new ManualClock(500);
    expect(createLimiter(fixed, clock).tryAcquire("k").resetMs).toBe(500);
    expect(createLimiter(fixed, { clock }).tryAcquire("k").resetMs).toBe(500);
  });

  it("validates the spec with a ConfigError naming the field and the value", () => {
    expect(() => createLimiter({ algorithm: "fixed-window", limit: 1.5, windowMs: 1000 })).toThrow(
      "limit must be a positive integer (got 1.5)",
    );
    try {
      createLimiter([fixed, { algorithm: "gcra", limit: 1, periodMs: 0 }]);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe("periodMs");
      expect((error as ConfigError).message).toMatch(/\[1\].*periodMs.*got 0/);
    }
  });

  it.each([
    [42, "key must be a string"],
    [undefined, "key must be a string"],
  ])("rejects key %s with ArgumentError", (key, message) => {
    const limiter = createLimiter(fixed);
    expect(() => limiter.tryAcquire(key as unknown as string)).toThrow(ArgumentError);
    expect(() => limiter.peek(key as unknown as string)).toThrow(message);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "2", 2 ** 53])(
    "rejects cost %s with ArgumentError",
    (cost) => {
      const limiter = createLimiter(fixed);
      expect(() => limiter.tryAcquire("k", cost as number)).toThrow(ArgumentError);
      // A rejected call changes nothing.
      expect(limiter.peek("k").remaining).toBe(1);
    },
  );

  it("keys are arbitrary strings, each with its own state", () => {
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, new ManualClock());
    for (const key of ["", " ", "{a}", "a:b", "*", "x".repeat(10_000), "ключ"]) {
      expect(limiter.tryAcquire(key).allowed).toBe(true);
      expect(limiter.tryAcquire(key).allowed).toBe(false);
    }
  });

  it("reset forgets a key", () => {
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, new ManualClock());
    limiter.tryAcquire("k");
    expect(limiter.tryAcquire("k").allowed).toBe(false);
    limiter.reset("k");
    expect(limiter.tryAcquire("k").allowed).toBe(true);
  });

  it("limiters on one store share state only when they share a name (or a spec)", () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const one = { algorithm: "fixed-window", limit: 1, windowMs: 1000 } as const;
    const a = createLimiter(one, { clock, store });
    const b = createLimiter(one, { clock, store });
    const c = createLimiter(one, { clock, store, name: "login" });
    expect(a.tryAcquire("k").allowed).toBe(true);
    expect(b.tryAcquire("k").allowed).toBe(false);
    expect(c.tryAcquire("k").allowed).toBe(true);
  });
});

describe("composite rules", () => {
  const spec = [
    { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
    { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
  ] as const;

  it("passes only if every member passes, and a denial consumes nothing", () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter(spec, clock);
    const first = limiter.tryAcquire("k");
    expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1, retryAfterMs: 0, resetMs: 60_000 });
    expect(first.parts?.map((p) => p.remaining)).toEqual([1, 2]);
    limiter.tryAcquire("k");
    const denied = limiter.tryAcquire("k");
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBe(1000);
    // The per-minute member reports what it still has: nothing was consumed.
    expect(denied.parts?.[1]).toMatchObject({ allowed: true, remaining: 1 });
    clock.set(1000);
    expect(limiter.tryAcquire("k")).toMatchObject({ allowed: true, limit: 3, remaining: 0 });
    const minute = limiter.tryAcquire("k");
    expect(minute).toMatchObject({ allowed: false, limit: 3, retryAfterMs: 59_000 });
    expect(minute.parts?.[0]).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("all members read one instant and retryAfterMs is the greatest", () => {
    const clock = new ManualClock(999);
    const limiter = createLimiter(
      [
        { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
        { algorithm: "sliding-log", limit: 1, windowMs: 5000 },
      ],
      clock,
    );
    limiter.tryAcquire("k");
    const d = limiter.tryAcquire("k");
    expect(d.parts?.map((p) => p.retryAfterMs)).toEqual([1000, 5000]);
    expect(d.retryAfterMs).toBe(5000);
    clock.advance(5000);
    expect(limiter.tryAcquire("k").allowed).toBe(true);
  });

  it("cost above any member's limit can never pass", () => {
    const limiter = createLimiter(spec, new ManualClock());
    expect(limiter.tryAcquire("k", 3).retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    expect(limiter.peek("k").remaining).toBe(1);
  });
});

describe("options and arrays", () => {
  it("an array of one spec is a composite: its decisions carry parts", () => {
    const clock = new ManualClock();
    const d = createLimiter([fixed], clock).tryAcquire("k");
    expect(d.parts).toEqual([{ allowed: true, limit: 2, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 }]);
    expect(createLimiter(fixed, clock).tryAcquire("k").parts).toBeUndefined();
  });

  it("refuses broken options at construction, not at the first request", () => {
    expect(() => createLimiter(fixed, { clok: new ManualClock() } as never)).toThrow(/unknown option `clok`/);
    expect(() => createLimiter(fixed, { clock: {} } as never)).toThrow(ArgumentError);
    expect(() => createLimiter(fixed, { store: {} } as never)).toThrow(/`store` must be a Store/);
    expect(() => createLimiter(fixed, 5 as never)).toThrow(ArgumentError);
  });

  it("refuses a clock reading that is not a finite number", () => {
    const limiter = createLimiter(fixed, { clock: { now: () => Number.NaN } });
    expect(() => limiter.tryAcquire("k")).toThrow(/clock.now\(\) must return a finite number/);
  });

  it("a Clock with extra fields is still a Clock", () => {
    const clock = Object.assign(new ManualClock(1500), { store: "not an option" });
    expect((createLimiter(fixed, clock as ManualClock).tryAcquire("k") as { resetMs: number }).resetMs).toBe(500);
  });
});

describe("onDecision", () => {
  it("reports every check, peek and refund with its decision; a throwing hook is only a warning", async () => {
    const events: Array<{ id: string; op: string; key: string; allowed: boolean | undefined }> = [];
    const clock = new ManualClock(0);
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      {
        clock,
        name: "login",
        onDecision: (e) => {
          expect(e.durationMs).toBeGreaterThanOrEqual(0);
          events.push({ id: e.id, op: e.op, key: e.key, allowed: e.decision?.allowed });
          if (e.key === "boom") throw new Error("hook failed");
        },
      },
    );
    limiter.tryAcquire("a");
    limiter.tryAcquire("a");
    limiter.peek("a");
    limiter.refund("a");
    const warned = new Promise<Error>((resolve) => {
      const listener = (w: Error & { code?: string }) => {
        if (w.code !== "SLUICE_HOOK") return;
        process.off("warning", listener);
        resolve(w);
      };
      process.on("warning", listener);
    });
    expect(limiter.tryAcquire("boom").allowed).toBe(true);
    expect((await warned).message).toMatch(/onDecision threw: hook failed/);
    expect(events).toEqual([
      { id: "name:login", op: "check", key: "a", allowed: true },
      { id: "name:login", op: "check", key: "a", allowed: false },
      { id: "name:login", op: "peek", key: "a", allowed: false },
      { id: "name:login", op: "refund", key: "a", allowed: true },
      { id: "name:login", op: "check", key: "boom", allowed: true },
    ]);
    expect(() => createLimiter({ algorithm: "gcra", limit: 1, periodMs: 1 }, { onDecision: 5 as never })).toThrow(
      /onDecision` must be a function/,
    );
  });

  it("a service passes its hook to every rule and tier", () => {
    const ids: string[] = [];
    const service = new RateLimiterService({ clock: new ManualClock(0), onDecision: (e) => ids.push(e.id) });
    service.addRule(
      "api",
      { algorithm: "gcra", limit: 5, periodMs: 1000 },
      {
        tiers: { pro: { algorithm: "gcra", limit: 50, periodMs: 1000 } },
      },
    );
    service.check("api", "k");
    service.check("api", "k", { tier: "pro" });
    expect(ids).toEqual(["rule:api", "rule:api:tier:pro"]);
  });
});

// Refund receipts (docs/semantics.md §10, SPEC §15): a decision carries `at`, and
// `refund(key, { cost, at })` gives back only units that check took and the algorithm still
// counts. The two late-refund cases of issue 14, then every algorithm at fixed instants.
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "./algorithms/specs.ts";
import { ManualClock } from "./core/clock.ts";
import { ArgumentError } from "./core/errors.ts";
import { limiterRefund } from "./http/count-mode.ts";
import { createLimiter } from "./limiter.ts";
import { RateLimiterService } from "./service.ts";
import { MemoryStore } from "./stores/memory/memory-store.ts";

const EPOCH = 1_800_000_000_000;

describe("refund receipts", () => {
  it("a decision carries `at`, the instant it was decided (not enumerated: decisions compare and print as before)", () => {
    const clock = new ManualClock(EPOCH + 5);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, clock);
    const d = limiter.tryAcquire("k");
    expect(d.at).toBe(EPOCH + 5);
    expect(Object.keys(d)).not.toContain("at");
    expect(JSON.stringify(d)).not.toContain('"at"');
    expect(limiter.refund("k", 1).at).toBe(EPOCH + 5);
  });

  it("sliding log, count: failed: a slow success refunded after its unit left the window frees nobody else's", () => {
    for (const start of [0, EPOCH]) {
      const clock = new ManualClock(start);
      const limiter = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 3000 }, clock);
      const refund = limiterRefund(limiter);
      const slow = limiter.tryAcquire("login"); // a success, answered at 3,200 ms
      const passed: number[] = [];
      for (const t of [1000, 2000, 3100, 3300, 3400]) {
        clock.set(start + t);
        if (t === 3300) {
          clock.set(start + 3200);
          void refund({ key: "login", cost: 1, tier: undefined }, slow);
          clock.set(start + t);
        }
        if (limiter.tryAcquire("login").allowed) passed.push(t);
      }
      // Wrong passwords at 1,000, 2,000 and 3,100 fill the window; the late refund returns nothing.
      expect(passed).toEqual([1000, 2000, 3100]);
      // Without a receipt the same refund takes the newest unit (3,100's): the old behaviour, documented.
      const clock2 = new ManualClock(start + 3100);
      const bare = createLimiter({ algorithm: "sliding-log", limit: 3, windowMs: 3000 }, clock2);
      for (const t of [1000, 2000, 3100]) {
        clock2.set(start + t);
        bare.tryAcquire("login");
      }
      clock2.set(start + 3200);
      bare.refund("login", 1);
      expect(bare.tryAcquire("login").allowed).toBe(true);
    }
  });

  it("fixed window, limit 1: A at 999, B at 1,000, A's refund at 1,001, C at 1,002: C is refused", () => {
    const clock = new ManualClock(999);
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, clock);
    const a = limiter.tryAcquire("k");
    clock.set(1000);
    expect(limiter.tryAcquire("k").allowed).toBe(true); // B
    clock.set(1001);
    limiter.refund("k", { cost: 1, at: a.at as number });
    clock.set(1002);
    expect(limiter.tryAcquire("k").allowed).toBe(false); // C
  });

  const specs: AlgorithmSpec[] = [
    { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
    { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
    { algorithm: "sliding-window", limit: 3, windowMs: 1000 },
    { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 },
    { algorithm: "gcra", limit: 3, periodMs: 3000 },
    { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 1 },
  ];
  for (const spec of specs) {
    it(`${spec.algorithm}: a receipt refunded at once returns the unit, at today's epoch too`, () => {
      for (const start of [0, EPOCH]) {
        const clock = new ManualClock(start + 100);
        const store = new MemoryStore();
        const limiter = createLimiter(spec, { clock, store });
        limiter.tryAcquire("k");
        const d = limiter.tryAcquire("k");
        const before = limiter.peek("k").remaining;
        expect(limiter.refund("k", { cost: 1, at: d.at as number }).remaining).toBe(before + 1);
        // The service takes the same receipt.
        const service = new RateLimiterService(clock);
        service.addRule("r", spec);
        const s = service.check("r", "k");
        expect(service.refund("r", "k", { cost: 1, at: s.at as number }).remaining).toBe(2); // a peek of 1 unit
      }
    });
  }

  it("refuses a malformed receipt with a typed error naming it", () => {
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, new ManualClock(0));
    expect(() => limiter.refund("k", { cost: 1, at: Number.NaN })).toThrow(ArgumentError);
    expect(() => limiter.refund("k", { cost: 1, when: 5 } as never)).toThrow(/unknown refund option `when`/);
  });
});

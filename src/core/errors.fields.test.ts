// Bad input at the public entry points is a typed error that names what was wrong (attack8 F7:
// these threw without `.field`, as a plain TypeError, or not at all).
import {
  ArgumentError,
  ConfigError,
  coarseClock,
  createLimiter,
  createThrottle,
  ManualClock,
  MemoryStore,
  RateLimiterService,
  type SluiceError,
} from "sluice";
import { describe, expect, it } from "vitest";

const RATE = { algorithm: "fixed-window", limit: 5, windowMs: 1000 } as const;

/** What `run` threw (or rejected with). */
async function thrown(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("bad input names its field", () => {
  const limiter = () => createLimiter(RATE, new ManualClock(1_765_000_000_000));
  const throttle = () => createThrottle({ rate: RATE });
  const cases: Array<[string, () => unknown, abstract new (...args: never[]) => SluiceError, string]> = [
    ["tryAcquire cost 0", () => limiter().tryAcquire("k", 0), ArgumentError, "cost"],
    ["tryAcquire key 5", () => limiter().tryAcquire(5 as never), ArgumentError, "key"],
    ["penalty cost 0", () => limiter().penalty("k", 0), ArgumentError, "cost"],
    ["refund cost -1", () => limiter().refund("k", -1), ArgumentError, "cost"],
    [
      "service.check cost '2'",
      () => {
        const s = new RateLimiterService();
        s.addRule("r", RATE);
        return s.check("r", "k", { cost: "2" as never });
      },
      ArgumentError,
      "cost",
    ],
    ["restore of garbage", () => new MemoryStore().restore("garbage"), ArgumentError, "text"],
    ["coarseClock maxReads 0", () => coarseClock({ maxReads: 0 }), ArgumentError, "maxReads"],
    ["new ManualClock(NaN)", () => new ManualClock(Number.NaN), ArgumentError, "start"],
    ["ManualClock set(NaN)", () => new ManualClock().set(Number.NaN), ArgumentError, "ms"],
    ["ManualClock advance(-500)", () => new ManualClock(1000).advance(-500), ArgumentError, "ms"],
    ["createThrottle name ''", () => createThrottle({ rate: RATE, name: "" }), ConfigError, "name"],
    ["throttle.wrap(42)", () => throttle().wrap(42 as never), ArgumentError, "fn"],
    ["throttle.close({ drain: 'yes' })", () => throttle().close({ drain: "yes" as never }), ArgumentError, "drain"],
    ["throttle.observe(k, 42)", () => throttle().observe("k", 42 as never), ArgumentError, "answer"],
  ];
  for (const [name, run, type, field] of cases) {
    it(name, async () => {
      const error = await thrown(run);
      expect(error).toBeInstanceOf(type);
      expect((error as { field?: string }).field).toBe(field);
    });
  }

  it("a refused advance leaves the clock where it was", () => {
    const clock = new ManualClock(1000);
    expect(() => clock.advance(-500)).toThrow(ArgumentError);
    expect(clock.now()).toBe(1000);
  });
});

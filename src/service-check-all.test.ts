import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ArgumentError, ManualClock, RateLimiterService } from "./index.ts";
import { RedisStore } from "./stores/redis/index.ts";

const window = (limit: number) => ({ algorithm: "fixed-window" as const, limit, windowMs: 1000 });

describe("RateLimiterService.checkAll", () => {
  it("takes every item when all fit, in item order", () => {
    const s = new RateLimiterService(new ManualClock()).addRule("a", window(2)).addRule("b", window(5));
    const d = s.checkAll([
      { rule: "a", key: "k" },
      { rule: "b", key: "k", cost: 3 },
    ]);
    expect(d.map((x) => [x.allowed, x.remaining])).toEqual([
      [true, 1],
      [true, 2],
    ]);
  });

  it("takes nothing when one item is over: the others are only peeked", () => {
    const s = new RateLimiterService(new ManualClock()).addRule("a", window(2)).addRule("b", window(1));
    s.check("b", "k");
    const d = s.checkAll([
      { rule: "a", key: "k" },
      { rule: "b", key: "k" },
    ]);
    expect(d.map((x) => x.allowed)).toEqual([true, false]);
    expect(s.peek("a", "k").remaining).toBe(1); // peek of one more: nothing was taken
  });

  it("a denial that starts a ban still rolls the group back (a banned key's refund gives units back)", () => {
    const clock = new ManualClock(0);
    const s = new RateLimiterService(clock).addRule(
      "a",
      { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
      { ban: { after: 1, withinMs: 1000, forMs: 100 } },
    );
    const d = s.checkAll([
      { rule: "a", key: "k", cost: 1 },
      { rule: "a", key: "k", cost: 2 },
    ]);
    expect(d.map((x) => x.allowed)).toEqual([false, false]);
    clock.set(200); // the ban is over; nothing of the group was kept
    expect(s.peek("a", "k", { cost: 2 })).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("items on one counter must fit together", () => {
    const s = new RateLimiterService(new ManualClock()).addRule("a", window(3));
    const d = s.checkAll([
      { rule: "a", key: "k", cost: 2 },
      { rule: "a", key: "k", cost: 2 },
    ]);
    // The second does not fit after the first: it is the one over the limit; the first, rolled
    // back, reports what a peek says.
    expect(d.map((x) => x.allowed)).toEqual([true, false]);
    expect(s.check("a", "k", { cost: 3 }).allowed).toBe(true);
  });

  it("a bad item changes nothing", () => {
    const s = new RateLimiterService(new ManualClock()).addRule("a", window(3));
    expect(() =>
      s.checkAll([
        { rule: "a", key: "k" },
        { rule: "a", key: "k", cost: 0.5 },
      ]),
    ).toThrow(ArgumentError);
    expect(s.peek("a", "k").remaining).toBe(2);
  });
});

describe("RateLimiterService.checkAll on Redis", () => {
  const client = new Redis("redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
  const prefix = `sluice-check-all-test:${randomUUID()}:`;
  afterAll(async () => {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  });

  it("takes nothing when one item is over", async () => {
    const s = new RateLimiterService({ store: new RedisStore({ client, prefix }), clock: new ManualClock(5000) })
      .addRule("a", window(2))
      .addRule("b", window(1));
    await s.check("b", "k");
    const d = await s.checkAll([
      { rule: "a", key: "k" },
      { rule: "b", key: "k" },
    ]);
    expect(d.map((x) => x.allowed)).toEqual([true, false]);
    expect((await s.peek("a", "k")).remaining).toBe(1);
    const ok = await s.checkAll([{ rule: "a", key: "k", cost: 2 }]);
    expect(ok.map((x) => [x.allowed, x.remaining])).toEqual([[true, 0]]);
  });
});

import { describe, expect, it } from "vitest";
import { ManualClock } from "../../core/clock.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { compileRule } from "../../core/rule.ts";
import type { RuleBinding } from "../../core/store.ts";
import { createLimiter } from "../../limiter.ts";
import { MemoryStore } from "../memory/memory-store.ts";
import { checkOnError, failurePolicy, type OnError, rulePolicy } from "./failure-policy.ts";

const TODAY = Date.UTC(2026, 11, 1);
const error = new StoreError("down");
const binding = (id: string): RuleBinding => ({
  id,
  rule: compileRule([
    { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
    { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 },
  ]),
});

describe("the one failure policy", () => {
  it("fixed answers report the rule's smallest limit; throw rejects with the error", async () => {
    const deny = await rulePolicy("deny", binding("r")).decide("k", 2, TODAY, "check", error);
    expect(deny).toMatchObject({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 1000, resetMs: 1000 });
    expect(deny.failure).toEqual({ policy: "deny", error });
    const allow = await rulePolicy("allow", binding("r")).decide("k", 2, TODAY, "check", error);
    expect(allow).toMatchObject({ allowed: true, limit: 3, remaining: 1, failure: { policy: "allow" } });
    await expect(rulePolicy("throw", binding("r")).decide("k", 1, TODAY, "check", error)).rejects.toBe(error);
  });

  it("hears every failure before answering (the warning)", async () => {
    const heard: StoreError[] = [];
    const policy = rulePolicy("deny", binding("r"), (e) => heard.push(e));
    await policy.decide("k", 1, TODAY, "check", error);
    await policy.decide("k", 1, TODAY, "peek", error);
    expect(heard).toEqual([error, error]);
  });

  it("{ fallback: Store } decides the same rule at the same now, and a reset forgets the key there", async () => {
    const policy = rulePolicy({ fallback: new MemoryStore() }, binding("r"));
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await policy.decide("k", 1, TODAY, "check", error));
    expect(seen.map((d) => [d.allowed, d.remaining, d.failure?.policy])).toEqual([
      [true, 2, "fallback"],
      [true, 1, "fallback"],
      [true, 0, "fallback"],
      [false, 0, "fallback"],
    ]);
    await policy.forget("k");
    expect(await policy.decide("k", 1, TODAY, "check", error)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("{ fallback, instances } enforces this process's share: 3 and 5 over 2 instances are 1 and 2", async () => {
    const share = rulePolicy({ fallback: new MemoryStore(), instances: 2 }, binding("r"));
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await share.decide("k", 1, TODAY, "check", error));
    expect(seen.map((d) => [d.allowed, d.limit, d.remaining, d.failure?.policy])).toEqual([
      [true, 1, 0, "fallback"],
      [false, 1, 0, "fallback"],
      [false, 1, 0, "fallback"],
    ]);
    // instances: 1 is the whole limit, as without it.
    const whole = rulePolicy({ fallback: new MemoryStore(), instances: 1 }, binding("r"));
    expect(await whole.decide("k", 1, TODAY, "check", error)).toMatchObject({ allowed: true, remaining: 2 });
    expect(() => checkOnError({ fallback: new MemoryStore(), instances: 0 })).toThrow(
      /`onError.instances` must be a positive integer \(got 0\)/,
    );
    expect(() => checkOnError({ fallback: new MemoryStore(), share: 2 })).toThrow(
      /unknown `onError` option `share` \(expected fallback, instances\)/,
    );
  });

  it("a shared fallback Limiter is forgotten on reset even by a rule that never failed", async () => {
    const clock = new ManualClock(TODAY);
    const shared = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { clock });
    const a = rulePolicy(shared, binding("a"));
    const b = rulePolicy(shared, binding("b"));
    expect((await a.decide("k", 1, undefined, "check", error)).allowed).toBe(true);
    expect((await a.decide("k", 1, undefined, "check", error)).allowed).toBe(false);
    await b.forget("k");
    expect((await a.decide("k", 1, undefined, "check", error)).allowed).toBe(true);
  });

  it("a factory builds one fallback per rule, on its first failure, named as the caller names rules", async () => {
    const clock = new ManualClock(TODAY);
    const made: string[] = [];
    const onError: OnError<string> = (rule) => {
      made.push(rule);
      return createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { clock });
    };
    const policy = failurePolicy(onError, { rule: "api", limit: () => 0 });
    await policy.forget("k"); // nothing bound yet: nothing made
    expect(made).toEqual([]);
    const ds = [
      await policy.decide("k", 1, undefined, "check", error),
      await policy.decide("k", 1, undefined, "check", error),
      await policy.decide("k", 1, undefined, "peek", error),
    ];
    expect(ds.map((d) => d.allowed)).toEqual([true, false, false]);
    expect(made).toEqual(["api"]);
  });

  it("checkOnError names what it got; the client's form refuses a fallback store", () => {
    expect(() => checkOnError("ignore")).toThrow(ArgumentError);
    expect(() => checkOnError("ignore")).toThrow(
      /`onError` must be "deny", "allow", "throw", \{ fallback: Store \}.*\(got "ignore"\)/,
    );
    expect(() => checkOnError({ fallback: new MemoryStore() }, false)).toThrow(
      /a function of the rule name.*\(got an object\)/,
    );
    expect(() => checkOnError({ fallback: {} })).toThrow(/`onError.fallback` must be a Store/);
    expect(checkOnError("allow")).toBe("allow");
  });
});

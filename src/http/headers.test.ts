import { parseDictionary, parseList, serializeList } from "structured-headers";
import { describe, expect, test } from "vitest";
import { type Decision, decision } from "../algorithms/decision.ts";
import { ConfigError } from "../core/errors.ts";
import { validateSpec } from "../core/spec.ts";
import {
  ceilSeconds,
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type LegacyReset,
  partsOf,
  retryAfterSeconds,
  writeRateLimitHeaders,
} from "./headers.ts";
import { policiesFor, windowSeconds } from "./policy.ts";
import { quotaExceeded, violatedPolicies } from "./problem.ts";

const write = (
  format: HeaderFormat,
  names: string | string[],
  specs: unknown[],
  d: Decision,
  counts = true,
  legacyReset: LegacyReset = "epoch",
) => {
  const set = compilePolicies(
    policiesFor(
      specs.map((s) => validateSpec(s)),
      names,
    ),
  );
  const out: Record<string, string> = {};
  writeRateLimitHeaders(
    format,
    set,
    d,
    counts,
    () => 1_000_000_500,
    (name, value) => {
      out[name] = value;
    },
    legacyReset,
  );
  return out;
};

describe("policy mapping (q, w)", () => {
  test.each([
    [{ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 100, 60],
    [{ algorithm: "sliding-log", limit: 5, windowMs: 1500 }, 5, 2],
    [{ algorithm: "sliding-window", limit: 7, windowMs: 200 }, 7, 1],
    [{ algorithm: "token-bucket", capacity: 10, refillPerSecond: 2 }, 10, 5],
    [{ algorithm: "token-bucket", capacity: 10, refillPerSecond: 3 }, 10, 4],
    [{ algorithm: "gcra", limit: 100, periodMs: 60_000 }, 100, 60],
    [{ algorithm: "gcra", limit: 3, periodMs: 1000, burst: 3 }, 3, 1],
    [{ algorithm: "gcra", limit: 100, periodMs: 60_000, burst: 10 }, 10, 6],
    [{ algorithm: "leaky-bucket", capacity: 20, leakPerSecond: 4 }, 20, 5],
  ])("%j → q=%i w=%i", (spec, q, w) => {
    const [policy] = policiesFor([validateSpec(spec)], "p");
    expect(policy).toEqual({ name: "p", quota: q, windowSeconds: w });
    expect(windowSeconds(validateSpec(spec))).toBe(w);
  });

  test("composite members are named name-1, name-2, … or by a list", () => {
    const specs = [
      validateSpec({ algorithm: "fixed-window", limit: 10, windowMs: 1000 }),
      validateSpec({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }),
    ];
    expect(policiesFor(specs, "api").map((p) => p.name)).toEqual(["api-1", "api-2"]);
    expect(policiesFor(specs, ["burst", "minute"]).map((p) => p.name)).toEqual(["burst", "minute"]);
    expect(() => policiesFor(specs, ["one"])).toThrow(ConfigError);
    expect(() => policiesFor(specs, "caf\u00e9")).toThrow(/printable ASCII/);
  });
});

const window = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 };
const daily = { algorithm: "fixed-window", limit: 1000, windowMs: 86_400_000 };

describe("draft-11", () => {
  test("one policy: canonical Structured Fields, byte-exact", () => {
    const h = write("draft-11", "default", [window], decision(true, 100, 42, 0, 17_001));
    expect(h).toEqual({ "RateLimit-Policy": '"default";q=100;w=60', RateLimit: '"default";r=42;t=18' });
    expect(serializeList(parseList(h.RateLimit as string))).toBe(h.RateLimit);
    expect(serializeList(parseList(h["RateLimit-Policy"] as string))).toBe(h["RateLimit-Policy"]);
  });

  test("a composite gives one list member per part; names with quotes are escaped", () => {
    const parts = [decision(true, 100, 3, 0, 5000), decision(true, 1000, 900, 0, 80_000_000)];
    const d: Decision = { ...decision(true, 100, 3, 0, 80_000_000), parts };
    const h = write("draft-11", ['say "hi"', "daily"], [window, daily], d);
    expect(h["RateLimit-Policy"]).toBe('"say \\"hi\\"";q=100;w=60, "daily";q=1000;w=86400');
    expect(h.RateLimit).toBe('"say \\"hi\\"";r=3;t=5, "daily";r=900;t=80000');
    const parsed = parseList(h.RateLimit as string).map(([item, params]) => [item, Object.fromEntries(params)]);
    expect(parsed).toEqual([
      ['say "hi"', { r: 3, t: 5 }],
      ["daily", { r: 900, t: 80_000 }],
    ]);
  });

  test("a denied member's reset is never before its retry-after", () => {
    // resetMs below retryAfterMs can occur (e.g. a store refusal); t must cover the retry.
    const d = decision(false, 100, 0, 2500, 1000);
    expect(write("draft-11", "p", [window], d).RateLimit).toBe('"p";r=0;t=3');
  });

  test("counts false (a fixed failure policy answered): the policy only", () => {
    expect(write("draft-11", "p", [window], decision(true, 100, 100, 0, 0), false)).toEqual({
      "RateLimit-Policy": '"p";q=100;w=60',
    });
  });
});

describe("older layouts report the member with least remaining", () => {
  const parts = [decision(true, 100, 3, 0, 5000), decision(true, 1000, 900, 0, 80_000_000)];
  const d: Decision = { ...decision(true, 100, 3, 0, 80_000_000), parts };
  test("draft-7", () => {
    const h = write("draft-7", "p", [window, daily], d);
    expect(h).toEqual({ "RateLimit-Policy": "100;w=60, 1000;w=86400", RateLimit: "limit=100, remaining=3, reset=5" });
    expect(Object.fromEntries([...parseDictionary(h.RateLimit as string)].map(([k, [v]]) => [k, v]))).toEqual({
      limit: 100,
      remaining: 3,
      reset: 5,
    });
  });
  test("draft-6", () => {
    expect(write("draft-6", "p", [window, daily], d)).toEqual({
      "RateLimit-Policy": "100;w=60, 1000;w=86400",
      "RateLimit-Limit": "100",
      "RateLimit-Remaining": "3",
      "RateLimit-Reset": "5",
    });
  });
  test("legacy: reset as epoch seconds, rounded up", () => {
    expect(write("legacy", "p", [window, daily], d)).toEqual({
      "X-RateLimit-Limit": "100",
      "X-RateLimit-Remaining": "3",
      "X-RateLimit-Reset": String(Math.ceil((1_000_000_500 + 5000) / 1000)),
    });
  });
  test("legacy with a delta reset (Fastify, Nest): the seconds left, rounded up", () => {
    expect(write("legacy", "p", [window, daily], d, true, "delta")).toEqual({
      "X-RateLimit-Limit": "100",
      "X-RateLimit-Remaining": "3",
      "X-RateLimit-Reset": "5",
    });
  });
  test("denied: reset covers the composite's retry-after", () => {
    const denied: Decision = {
      ...decision(false, 100, 0, 9000, 9000),
      parts: [decision(false, 100, 0, 9000, 9000), decision(true, 1000, 5, 0, 100)],
    };
    expect(write("draft-7", "p", [window, daily], denied).RateLimit).toBe("limit=100, remaining=0, reset=9");
  });
});

describe("a tie in remaining: the single-limit layouts report Decision.limit (the first member's)", () => {
  // Both members have 2 left; combine() reports the first member's limit, and so must every header.
  const tie = (first: Decision, second: Decision): Decision => ({
    ...decision(true, first.limit, 2, 0, Math.max(first.resetMs, second.resetMs)),
    parts: [first, second],
  });
  const small = decision(true, 100, 2, 0, 5000);
  const large = decision(true, 1000, 2, 0, 80_000_000);
  test.each([
    ["draft-7", [window, daily], tie(small, large), "RateLimit", "limit=100, remaining=2, reset=5"],
    ["draft-7", [daily, window], tie(large, small), "RateLimit", "limit=1000, remaining=2, reset=80000"],
    ["draft-6", [window, daily], tie(small, large), "RateLimit-Limit", "100"],
    ["draft-6", [daily, window], tie(large, small), "RateLimit-Limit", "1000"],
    ["legacy", [window, daily], tie(small, large), "X-RateLimit-Limit", "100"],
    ["legacy", [daily, window], tie(large, small), "X-RateLimit-Limit", "1000"],
  ] as const)("%s with members %j", (format, specs, d, name, value) => {
    expect(write(format, "p", [...specs], d)[name]).toBe(value);
    expect(String(d.limit)).toBe(/limit=(\d+)/.exec(value)?.[1] ?? value);
  });
});

describe("Retry-After and problem bodies", () => {
  test("whole seconds rounded up, at least 1; none when the request can never pass", () => {
    expect(retryAfterSeconds(decision(false, 1, 0, 1, 1))).toBe("1");
    expect(retryAfterSeconds(decision(false, 1, 0, 1000, 1000))).toBe("1");
    expect(retryAfterSeconds(decision(false, 1, 0, 1001, 1001))).toBe("2");
    expect(retryAfterSeconds(decision(false, 1, 0, Number.POSITIVE_INFINITY, 0))).toBeUndefined();
  });

  test("violated-policies names the denying members", () => {
    const policies = policiesFor([validateSpec(window), validateSpec(daily)], ["minute", "day"]);
    const d: Decision = {
      ...decision(false, 1000, 0, 5000, 5000),
      parts: [decision(true, 100, 50, 0, 10), decision(false, 1000, 0, 5000, 5000)],
    };
    expect(violatedPolicies(d, policies)).toEqual(["day"]);
    const body = quotaExceeded(d, policies);
    expect(body).toMatchObject({
      status: 429,
      "violated-policies": ["day"],
      detail: expect.stringMatching(/5 seconds/),
    });
    const never = quotaExceeded(decision(false, 100, 100, Number.POSITIVE_INFINITY, 0), policies.slice(0, 1));
    expect(never.detail).toMatch(/never/);
  });
});

// Edges the mutation run (docs/testing.md) found unchecked.
describe("edges", () => {
  test("the layouts, for validation messages", () => {
    expect(HEADER_FORMATS).toEqual(["draft-11", "draft-7", "draft-6", "legacy"]);
  });

  test("ceilSeconds: nothing below zero", () => {
    expect([-1500, -1, 0, 1, 1000, 1001].map(ceilSeconds)).toEqual([0, 0, 0, 1, 1, 2]);
  });

  test("partsOf: the parts when there is one per policy, else the decision repeated", () => {
    const a = decision(true, 100, 3, 0, 5000);
    const b = decision(true, 1000, 900, 0, 80_000_000);
    const d: Decision = { ...a, parts: [a, b] };
    expect(partsOf(d, 2)).toEqual([a, b]);
    expect(partsOf(d, 1)).toEqual([d]);
    expect(partsOf(a, 1)).toEqual([a]);
    expect(partsOf(a, 3)).toEqual([a, a, a]);
  });

  test("a member that can never pass: reset is its own, not infinite", () => {
    const never = decision(false, 100, 100, Number.POSITIVE_INFINITY, 4000);
    expect(write("draft-11", "p", [window], never).RateLimit).toBe('"p";r=100;t=4');
  });

  test("the tightest member need not be the first", () => {
    const parts = [decision(true, 1000, 900, 0, 80_000_000), decision(true, 100, 3, 0, 5000)];
    const d: Decision = { ...decision(true, 100, 3, 0, 80_000_000), parts };
    expect(write("draft-7", "p", [daily, window], d).RateLimit).toBe("limit=100, remaining=3, reset=5");
  });

  test.each(["draft-7", "draft-6", "legacy"] as const)("%s with counts false: the policy only", (format) => {
    const h = write(format, "p", [window], decision(true, 100, 100, 0, 0), false);
    expect(h).toEqual(format === "legacy" ? {} : { "RateLimit-Policy": "100;w=60" });
  });
});

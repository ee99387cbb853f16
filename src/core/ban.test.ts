// The ban's state machine at fixed instants: counting denials in a span, starting a ban, when
// the state stops mattering, and validation naming the field.
import { describe, expect, it } from "vitest";
import { banFreshAt, countDenial, freshBan, validateBan } from "./ban.ts";

const INF = Number.POSITIVE_INFINITY;
const policy = { after: 3, withinMs: 1000, forMs: 500 };

describe("countDenial", () => {
  it("bans on the after-th denial within the span, then counts afresh", () => {
    const s = freshBan();
    expect(s).toEqual({ n: 0, since: -INF, until: -INF });
    expect([countDenial(s, policy, 0), countDenial(s, policy, 10)]).toEqual([false, false]);
    expect(s).toEqual({ n: 2, since: 0, until: -INF });
    expect(countDenial(s, policy, 999)).toBe(true);
    expect(s).toEqual({ n: 0, since: 0, until: 1499 });
    expect(countDenial(s, policy, 1600)).toBe(false);
    expect(s).toEqual({ n: 1, since: 1600, until: 1499 });
  });

  it("a denial exactly withinMs after the first starts a new span; 1 ms less does not", () => {
    const s = freshBan();
    countDenial(s, policy, 0);
    countDenial(s, policy, 999);
    expect(s).toMatchObject({ n: 2, since: 0 });
    countDenial(s, policy, 1000);
    expect(s).toMatchObject({ n: 1, since: 1000 });
  });

  it("after: 1 bans on every denial", () => {
    const s = freshBan();
    expect(countDenial(s, { after: 1, withinMs: 10, forMs: 7 }, 100)).toBe(true);
    expect(s).toEqual({ n: 0, since: 100, until: 107 });
  });
});

describe("banFreshAt", () => {
  it.each([
    [{ n: 0, since: -INF, until: -INF }, -INF],
    [{ n: 2, since: 100, until: -INF }, 1100],
    [{ n: 0, since: 100, until: 5000 }, 5000],
    [{ n: 0, since: 100, until: 50 }, 50],
    [{ n: 1, since: 100, until: 50 }, 1100],
    [{ n: 1, since: 100, until: 1100 }, 1100],
    [{ n: 1, since: 100, until: 1101 }, 1101],
  ])("%j → %d", (state, at) => {
    expect(banFreshAt(state, policy)).toBe(at);
  });
});

describe("validateBan", () => {
  it("passes undefined through and returns exactly the three fields", () => {
    expect(validateBan(undefined)).toBeUndefined();
    expect(validateBan({ after: 1, withinMs: 2, forMs: 3 })).toEqual({ after: 1, withinMs: 2, forMs: 3 });
  });

  it.each([null, [], 5, "x"])("refuses a non-object (%j), naming the shape", (input) => {
    expect(() => validateBan(input)).toThrow(/^`ban` must be \{ after, withinMs, forMs \} \(got /);
  });

  it("refuses an unknown option, naming it and the expected ones", () => {
    expect(() => validateBan({ after: 1, withinMs: 1, forMs: 1, for: 2 })).toThrow(
      "unknown `ban` option `for` (expected after, withinMs, forMs)",
    );
  });

  for (const field of ["after", "withinMs", "forMs"] as const) {
    it.each([0, -1, 1.5, "1", undefined, Number.MAX_SAFE_INTEGER + 1])(`refuses ${field} = %j`, (value) => {
      const input = { after: 1, withinMs: 1, forMs: 1, [field]: value };
      expect(() => validateBan(input)).toThrow(new RegExp(`^\`ban\\.${field}\` must be a positive integer \\(got `));
    });
  }

  it("prefixes messages with where the policy came from", () => {
    expect(() => validateBan(7, 'rule "r": ')).toThrow(/^rule "r": `ban` must be/);
    expect(() => validateBan({ x: 1 }, 'rule "r": ')).toThrow(/^rule "r": unknown `ban` option `x`/);
    expect(() => validateBan({ after: 0, withinMs: 1, forMs: 1 }, 'rule "r": ')).toThrow(/^rule "r": `ban\.after`/);
  });
});

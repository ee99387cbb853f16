// Spec validation against docs/semantics.md §3 and §7: every bad value throws ConfigError (ERR_INVALID_SPEC)
// naming the field and the value received; valid specs and the seed's aliases normalise.
import { ConfigError, createLimiter, validateRule, validateSpec } from "sluice";
import { describe, expect, it } from "vitest";

/** The ConfigError `run` throws (fails the test if it throws nothing or something else). */
function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, nothing was thrown");
}

const BASE = {
  "fixed-window": { limit: 10, windowMs: 1000 },
  "sliding-log": { limit: 10, windowMs: 1000 },
  "sliding-window": { limit: 10, windowMs: 1000 },
  "token-bucket": { capacity: 10, refillPerSecond: 2 },
  gcra: { limit: 10, periodMs: 1000, burst: 5 },
  "leaky-bucket": { capacity: 10, leakPerSecond: 2 },
} as const;
const INTEGER_FIELDS: Array<[keyof typeof BASE, string]> = [
  ["fixed-window", "limit"],
  ["fixed-window", "windowMs"],
  ["sliding-log", "limit"],
  ["sliding-log", "windowMs"],
  ["sliding-window", "limit"],
  ["sliding-window", "windowMs"],
  ["token-bucket", "capacity"],
  ["gcra", "limit"],
  ["gcra", "periodMs"],
  ["gcra", "burst"],
  ["leaky-bucket", "capacity"],
];
const RATE_FIELDS: Array<[keyof typeof BASE, string]> = [
  ["token-bucket", "refillPerSecond"],
  ["leaky-bucket", "leakPerSecond"],
];
/** Bad values and how the message shows them. */
const BAD_NUMBERS: Array<[unknown, string]> = [
  [Number.NaN, "NaN"],
  [Number.POSITIVE_INFINITY, "Infinity"],
  [Number.NEGATIVE_INFINITY, "-Infinity"],
  [-1, "-1"],
  [0, "0"],
  ["5", '"5"'],
  [null, "null"],
  [[5], "an array"],
  [{ n: 5 }, "an object"],
  [true, "true"],
  [5n, "5n"],
];

describe("validateSpec: bad values", () => {
  it.each(INTEGER_FIELDS)("%s.%s: NaN, ±Infinity, negative, zero, fractions, non-numbers", (algorithm, field) => {
    const cases: Array<[unknown, string]> = [...BAD_NUMBERS, [1.5, "1.5"], [2 ** 53, String(2 ** 53)]];
    for (const [value, shown] of cases) {
      const error = configError(() => createLimiter({ algorithm, ...BASE[algorithm], [field]: value } as never));
      expect(error.code).toBe("ERR_INVALID_SPEC");
      expect(error.field).toBe(field);
      expect(error.message).toBe(`${field} must be a positive integer (got ${shown})`);
    }
  });

  it.each(RATE_FIELDS)(
    "%s.%s: NaN, ±Infinity, negative, zero, non-numbers (fractions are fine)",
    (algorithm, field) => {
      for (const [value, shown] of BAD_NUMBERS) {
        const error = configError(() => validateSpec({ algorithm, ...BASE[algorithm], [field]: value }));
        expect(error.code).toBe("ERR_INVALID_SPEC");
        expect(error.field).toBe(field);
        expect(error.message).toBe(`${field} must be a finite number greater than 0 (got ${shown})`);
      }
      expect(validateSpec({ algorithm, ...BASE[algorithm], [field]: 0.25 })).toMatchObject({ [field]: 0.25 });
    },
  );

  it.each(RATE_FIELDS)("%s.%s: a rate whose refill time overflows is refused, not unlimited", (algorithm, field) => {
    const error = configError(() => validateSpec({ algorithm, ...BASE[algorithm], [field]: 1e-310 }));
    expect(error.field).toBe(field);
    expect(error.message).toContain("(got 1e-310)");
  });

  it("a missing required field is named", () => {
    const error = configError(() => validateSpec({ algorithm: "fixed-window", limit: 3 }));
    expect([error.field, error.message]).toEqual(["windowMs", "windowMs must be a positive integer (got undefined)"]);
  });

  it("unknown fields are refused, naming the field and its value", () => {
    const error = configError(() => validateSpec({ algorithm: "fixed-window", limit: 3, windowMs: 10, burst: 2 }));
    expect(error.field).toBe("burst");
    expect(error.message).toMatch(/burst/);
    expect(error.message).toMatch(/\(got 2\)$/);
    // A field of another algorithm, a typo, and a seed alias with a foreign field.
    expect(configError(() => validateSpec({ algorithm: "gcra", limit: 1, periodMs: 1, windowMs: 1 })).field).toBe(
      "windowMs",
    );
    expect(configError(() => validateSpec({ algorithm: "sliding-log", limit: 1, windowMS: 1 })).field).toBe("windowMS");
    expect(configError(() => validateSpec({ type: "bucket", capacity: 1, refillPerSecond: 1, limit: 1 })).field).toBe(
      "limit",
    );
  });

  it("unknown algorithm or type, both at once, or neither", () => {
    const unknown = configError(() => validateSpec({ algorithm: "leaky", limit: 1, windowMs: 1 }));
    expect([unknown.code, unknown.field]).toEqual(["ERR_INVALID_SPEC", "algorithm"]);
    expect(unknown.message).toMatch(/algorithm must be one of .*\(got "leaky"\)$/);
    expect(configError(() => validateSpec({ algorithm: 7, limit: 1, windowMs: 1 })).message).toMatch(/\(got 7\)$/);
    const type = configError(() => validateSpec({ type: "token-bucket", capacity: 1, refillPerSecond: 1 }));
    expect(type.field).toBe("type");
    expect(type.message).toMatch(/\(got "token-bucket"\)$/);
    expect(configError(() => validateSpec({ type: "toString", limit: 1, windowMs: 1 })).field).toBe("type");
    const both = configError(() => validateSpec({ algorithm: "fixed-window", type: "fixed", limit: 1, windowMs: 1 }));
    expect(both.field).toBe("type");
    expect(configError(() => validateSpec({ limit: 1, windowMs: 1 })).field).toBe("algorithm");
  });

  it("non-objects and empty composites", () => {
    for (const [value, shown] of [
      [null, "null"],
      [undefined, "undefined"],
      ["fixed-window", '"fixed-window"'],
      [42, "42"],
      [new Map(), "an object"],
    ] as Array<[unknown, string]>) {
      const error = configError(() => createLimiter(value as never));
      expect(error.code).toBe("ERR_INVALID_SPEC");
      expect(error.message).toMatch(new RegExp(`\\(got ${shown.replace(/"/g, '\\"')}\\)$`));
    }
    const empty = configError(() => createLimiter([]));
    expect([empty.code, empty.field]).toEqual(["ERR_INVALID_SPEC", "spec"]);
    const nested = configError(() => validateRule([BASE["fixed-window"]]));
    expect(nested.field).toBe("algorithm");
    const member = configError(() =>
      createLimiter([
        { algorithm: "fixed-window", limit: 1, windowMs: 1 },
        { algorithm: "gcra", limit: 1, periodMs: 0 },
      ]),
    );
    expect(member.field).toBe("periodMs");
    expect(member.message).toMatch(/^\[1\] /); // says which member
    expect(configError(() => validateRule([[{ algorithm: "fixed-window", limit: 1, windowMs: 1 }]])).field).toBe(
      "spec",
    );
  });

  it("sliding-window refuses limit × windowMs past 2^51 (the integer comparison must stay exact)", () => {
    expect(validateSpec({ algorithm: "sliding-window", limit: 2 ** 21, windowMs: 2 ** 30 })).toBeTruthy();
    expect(
      configError(() => validateSpec({ algorithm: "sliding-window", limit: 2 ** 21, windowMs: 2 ** 30 + 1 })).field,
    ).toBe("windowMs");
  });
});

describe("validateSpec: normalisation", () => {
  it("keeps valid specs as written, with `algorithm` set", () => {
    for (const [algorithm, fields] of Object.entries(BASE)) {
      expect(validateSpec({ algorithm, ...fields })).toEqual({ algorithm, ...fields });
    }
  });

  it("gcra burst defaults to limit", () => {
    expect(validateSpec({ algorithm: "gcra", limit: 7, periodMs: 1000 })).toEqual({
      algorithm: "gcra",
      limit: 7,
      periodMs: 1000,
      burst: 7,
    });
    expect(createLimiter({ algorithm: "gcra", limit: 7, periodMs: 1000 }).peek("k").limit).toBe(7);
  });

  it("the seed's aliases: fixed, sliding, bucket", () => {
    expect(validateSpec({ type: "fixed", limit: 2, windowMs: 1000 })).toEqual({
      algorithm: "fixed-window",
      limit: 2,
      windowMs: 1000,
    });
    expect(validateSpec({ type: "sliding", limit: 2, windowMs: 1000 })).toEqual({
      algorithm: "sliding-log",
      limit: 2,
      windowMs: 1000,
    });
    expect(validateSpec({ type: "bucket", capacity: 3, refillPerSecond: 0.5 })).toEqual({
      algorithm: "token-bucket",
      capacity: 3,
      refillPerSecond: 0.5,
    });
  });

  it("the largest safe integers and years-long windows are accepted", () => {
    const W = 10 * 365 * 86_400_000;
    expect(validateSpec({ algorithm: "fixed-window", limit: Number.MAX_SAFE_INTEGER, windowMs: W })).toBeTruthy();
    expect(validateSpec({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 1e-6 })).toBeTruthy();
  });
});

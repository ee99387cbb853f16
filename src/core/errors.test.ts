import {
  ArgumentError,
  ConfigError,
  DuplicateRuleError,
  isSluiceError,
  LeaseLostError,
  QueueFullError,
  SluiceError,
  StoreError,
  ThrottleClosedError,
  UnknownRuleError,
  WaitTimeoutError,
} from "sluice";
import { describe, expect, it } from "vitest";

describe("errors", () => {
  it("every error extends SluiceError with a stable code", () => {
    const cases: Array<[SluiceError, string]> = [
      [new ConfigError("limit", "limit must be a positive integer (got 0)", 0), "ERR_INVALID_SPEC"],
      [new ArgumentError("bad"), "ERR_INVALID_ARGUMENT"],
      [new UnknownRuleError("r"), "ERR_UNKNOWN_RULE"],
      [new DuplicateRuleError("r"), "ERR_DUPLICATE_RULE"],
      [new StoreError("down"), "ERR_STORE"],
      [new StoreError("slow", { timeout: true }), "ERR_STORE_TIMEOUT"],
      [new WaitTimeoutError("late"), "ERR_WAIT_TIMEOUT"],
      [new QueueFullError("full"), "ERR_QUEUE_FULL"],
      [new ThrottleClosedError("closed"), "ERR_THROTTLE_CLOSED"],
      [new LeaseLostError("lost"), "ERR_LEASE_LOST"],
    ];
    for (const [error, code] of cases) {
      expect(error).toBeInstanceOf(SluiceError);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(code);
      expect(error.name).toBe(error.constructor.name);
      expect(isSluiceError(error)).toBe(true);
    }
    expect(isSluiceError(new Error("x"))).toBe(false);
    const cause = new Error("ECONNREFUSED");
    expect(new StoreError("down", { cause }).cause).toBe(cause);
    expect(new ConfigError("limit", "m", 0).field).toBe("limit");
    // ArgumentError names its field too: given, or the first name the message puts in backticks.
    expect(new ArgumentError("schedule: `priority` must be an integer 0–9 (got 10)").field).toBe("priority");
    expect(new ArgumentError("m", { field: "cost" }).field).toBe("cost");
    expect(new ArgumentError("bad").field).toBeUndefined();
  });
});

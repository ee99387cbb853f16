import { describe, expect, it } from "vitest";
import { ArgumentError, StoreError, UnknownRuleError } from "../core/errors.ts";
import { readDecision, refusal } from "./wire.ts";

describe("reading the service's JSON", () => {
  it("restores Infinity from null, parts, and a server-side failure as a StoreError", () => {
    const d = readDecision({
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterMs: null,
      resetMs: 10,
      delayMs: 0,
      parts: [{ allowed: false, limit: 5, remaining: 0, retryAfterMs: null, resetMs: 10, delayMs: 0 }],
      failure: { policy: "deny", code: "ERR_STORE_TIMEOUT" },
    });
    expect(d.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    expect(d.parts?.[0]?.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    expect(d.failure?.policy).toBe("deny");
    expect(d.failure?.error).toBeInstanceOf(StoreError);
    expect(d.failure?.error).toMatchObject({ code: "ERR_STORE_TIMEOUT" });
  });

  it("anything that is not a Decision is a StoreError naming what came", () => {
    expect(() => readDecision({ ok: true })).toThrow(StoreError);
    expect(() => readDecision("<html>")).toThrow(/not a Decision: "<html>"/);
  });

  it("maps refusals to typed errors with the service's detail", () => {
    expect(refusal(404, { type: "urn:sluice:problem:unknown-rule", detail: "unknown rule" }, "r")).toBeInstanceOf(
      UnknownRuleError,
    );
    const bad = refusal(400, { type: "urn:sluice:problem:invalid-check", detail: "`cost` must be..." }, "r");
    expect(bad).toBeInstanceOf(ArgumentError);
    expect(bad.message).toContain("`cost` must be...");
    const other = refusal(404, { type: "urn:sluice:problem:not-found", detail: "no endpoint at /v1/peek" }, "r");
    expect(other).toBeInstanceOf(StoreError);
    expect(other.message).toBe("sluice service refused the call (404 not-found): no endpoint at /v1/peek");
  });
});

// decision(): the one place a Decision's shape is built and `-0` is normalised; ceilMs's
// rounding. Tables at fixed values.
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { ceilMs, decision, EPSILON } from "./decision.ts";

describe("decision", () => {
  it("normalises -0 to +0 in every figure (Math.ceil(-0.5) is -0)", () => {
    const d = decision(false, 3, -0, -0, -0, -0);
    for (const figure of [d.remaining, d.retryAfterMs, d.resetMs, d.delayMs]) expect(Object.is(figure, 0)).toBe(true);
    expect(decision(true, 3, 2, 0, 5).delayMs).toBe(0);
  });

  it("prints as the plain object the interface describes, without the receipt", () => {
    const d = decision(true, 3, 2, 0, 1000, 7);
    d.at = 1_796_083_200_000;
    expect(inspect(d)).toBe(
      "{\n  allowed: true,\n  limit: 3,\n  remaining: 2,\n  retryAfterMs: 0,\n  resetMs: 1000,\n  delayMs: 7\n}",
    );
    expect(d.at).toBe(1_796_083_200_000);
    expect(Object.keys(d)).not.toContain("at");
  });
});

describe("ceilMs", () => {
  it.each([
    [0, 0],
    [EPSILON / 10, 0], // float noise is nothing, and +0 (not the -0 of Math.ceil(-9e-7))
    [EPSILON, 0],
    [-5, 0],
    [1 + EPSILON / 2, 1],
    [1.001, 2],
    [333.3333, 334],
  ])("ceilMs(%d) = %d", (ms, want) => {
    expect(Object.is(ceilMs(ms), want)).toBe(true);
  });
});

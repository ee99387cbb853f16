// countDenial after a ban: the count restarts at the next denial, not at the span of the
// denials that started the ban (found open by the mutation run, docs/testing.md).
import { describe, expect, it } from "vitest";
import { type BanState, countDenial } from "./ban.ts";

const T = Date.UTC(2026, 11, 1);
const POLICY = { after: 2, withinMs: 1000, forMs: 100 };

describe("countDenial", () => {
  it("after a ban begins, the next denial opens a new span of its own", () => {
    const state: BanState = { since: Number.NEGATIVE_INFINITY, n: 0, until: Number.NEGATIVE_INFINITY };
    expect(countDenial(state, POLICY, T)).toBe(false);
    expect(countDenial(state, POLICY, T + 10)).toBe(true); // banned until T + 110
    expect(state).toMatchObject({ n: 0, until: T + 110 });
    // Within the old span (T + 200 < T + 1000), but the span restarts here: T + 200 … T + 1200.
    expect(countDenial(state, POLICY, T + 200)).toBe(false);
    expect(state).toMatchObject({ since: T + 200, n: 1 });
    expect(countDenial(state, POLICY, T + 1100)).toBe(true);
  });
});

// Compiled rules: the record layout (bare member state, or members then the ban), the shape
// that keeps records apart, and the instants from which a record is as good as fresh.
import { describe, expect, it } from "vitest";
import { compileRule, createRecord, recordFreshAt } from "./rule.ts";
import { validateSpec } from "./spec.ts";

const INF = Number.POSITIVE_INFINITY;
const fixed = validateSpec({ algorithm: "fixed-window", limit: 2, windowMs: 1000 });
const log = validateSpec({ algorithm: "sliding-log", limit: 3, windowMs: 5000 });
const ban = { after: 2, withinMs: 7000, forMs: 9000 };

describe("compileRule", () => {
  it("one member without a ban is bare; a composite or a ban is not", () => {
    expect(compileRule([fixed]).bare).toBe(true);
    expect(compileRule([fixed, log]).bare).toBe(false);
    expect(compileRule([fixed], ban).bare).toBe(false);
  });

  it("shapes join the members' shapes and the ban's span", () => {
    expect(compileRule([fixed]).shape).toBe("fixed-window/1000");
    expect(compileRule([fixed, log]).shape).toBe("fixed-window/1000+sliding-log/5000");
    expect(compileRule([fixed], ban).shape).toBe("fixed-window/1000+ban/7000");
  });

  it("the horizon is the longest of the members' and the ban's spans", () => {
    expect(compileRule([fixed]).horizonMs).toBe(1000);
    expect(compileRule([fixed, log]).horizonMs).toBe(5000);
    expect(compileRule([fixed], ban).horizonMs).toBe(9000);
    expect(compileRule([fixed], { after: 1, withinMs: 12_000, forMs: 10 }).horizonMs).toBe(12_000);
  });
});

describe("records", () => {
  it("a bare rule's record is the member's state; otherwise the members' states then the ban's", () => {
    expect(createRecord(compileRule([fixed]))).toEqual({ w: -INF, c: 0 });
    expect(createRecord(compileRule([fixed, log]))).toHaveLength(2);
    const withBan = createRecord(compileRule([fixed], ban)) as unknown[];
    expect(withBan).toHaveLength(2);
    expect(withBan[1]).toEqual({ n: 0, since: -INF, until: -INF });
  });

  it("recordFreshAt is the latest of the members' and the ban's", () => {
    const bare = compileRule([fixed]);
    expect(recordFreshAt(bare, { w: 3000, c: 1 })).toBe(4000);
    const both = compileRule([fixed, log]);
    const record = createRecord(both) as unknown[];
    expect(recordFreshAt(both, record)).toBe(-INF);
    record[0] = { w: 3000, c: 1 };
    expect(recordFreshAt(both, record)).toBe(4000);
    const banned = compileRule([fixed], ban);
    expect(
      recordFreshAt(banned, [
        { w: 3000, c: 1 },
        { n: 1, since: 2000, until: -INF },
      ]),
    ).toBe(9000);
    expect(
      recordFreshAt(banned, [
        { w: 3000, c: 1 },
        { n: 0, since: 2000, until: 3500 },
      ]),
    ).toBe(4000);
    expect(
      recordFreshAt(banned, [
        { w: 3000, c: 1 },
        { n: 0, since: 2000, until: 20_000 },
      ]),
    ).toBe(20_000);
  });
});

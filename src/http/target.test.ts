// An unknown tier is refused without naming the rule's other tiers (a client choosing its tier
// through a header would learn which to ask for); the operator gets them in a warning.
import { describe, expect, test } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { RateLimiterService } from "../service.ts";
import { targetOf } from "./target.ts";

describe("unknown tiers", () => {
  test("the 400 names only the requested tier; the warning lists the rule's tiers", () => {
    const service = new RateLimiterService(new ManualClock(0)).addRule(
      "api",
      { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
      { tiers: { "internal-staff-unlimited": { algorithm: "fixed-window", limit: 1e6, windowMs: 1000 } } },
    );
    const warnings: string[] = [];
    const target = targetOf({ service, rule: "api" } as never, "reject", (_code, message) => warnings.push(message));
    const answer = target.check("k", 1, "gold", () => {
      throw new Error("an unknown tier must not be decided");
    });
    expect(answer).toMatchObject({ status: 400, detail: 'Unknown tier "gold" for rule "api".' });
    expect(JSON.stringify(answer)).not.toContain("internal-staff-unlimited");
    expect(warnings).toEqual([
      'sluice rateLimit: tier(req) named tier "gold", which rule "api" does not have (its tiers: "internal-staff-unlimited"); answered 400',
    ]);
  });
});

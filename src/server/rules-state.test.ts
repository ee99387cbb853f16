// Rules files: the wrapped form `{ spec, tiers?, ban? }`, with human durations in `ban`.
import { ConfigError, ManualClock, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { parseRulesText } from "../config/rules-file.ts";
import { applyConfig } from "./rules-state.ts";

describe("rules files: ban", () => {
  it("reads `ban` with durations and applies it to the rule", () => {
    const config = parseRulesText(
      "rules:\n  login:\n    spec: { algorithm: fixed-window, limit: 1, windowMs: 1m }\n    ban: { after: 2, withinMs: 1m, forMs: 1h }\n",
    );
    expect(config.rules[0]?.ban).toEqual({ after: 2, withinMs: 60_000, forMs: 3_600_000 });
    const service = new RateLimiterService(new ManualClock(0));
    applyConfig(service, config);
    service.check("login", "k");
    service.check("login", "k");
    expect(service.check("login", "k")).toMatchObject({ allowed: false, banned: true, retryAfterMs: 3_600_000 });
    expect(service.getRule("login")?.ban).toEqual({ after: 2, withinMs: 60_000, forMs: 3_600_000 });
  });

  it("a changed ban is applied on reload; a bad one is a ConfigError naming the rule", () => {
    const service = new RateLimiterService(new ManualClock(0));
    applyConfig(service, parseRulesText("rules:\n  a: { algorithm: gcra, limit: 1, periodMs: 1s }\n"));
    const result = applyConfig(
      service,
      parseRulesText(
        "rules:\n  a:\n    spec: { algorithm: gcra, limit: 1, periodMs: 1s }\n    ban: { after: 1, withinMs: 1s, forMs: 1s }\n",
      ),
    );
    expect(result.updated).toEqual(["a"]);
    expect(() =>
      parseRulesText(
        "rules:\n  a:\n    spec: { algorithm: gcra, limit: 1, periodMs: 1s }\n    ban: { after: 0, withinMs: 1s, forMs: 1s }\n",
      ),
    ).toThrow(ConfigError);
    expect(() =>
      parseRulesText("rules:\n  a:\n    spec: { algorithm: gcra, limit: 1, periodMs: 1s }\n    bans: {}\n"),
    ).toThrow(/rule "a": unknown key `bans`/);
  });
});

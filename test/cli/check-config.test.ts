import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, tempDir } from "./helpers.ts";

const tmp = tempDir();
beforeAll(ensureBuilt);
afterAll(tmp.cleanup);

describe("sluice check-config", () => {
  it("summarises every rule and tier of the example file in words", async () => {
    const r = await run(["check-config", "examples/rules.yaml"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("api: 10 per second on average; bursts up to 20\n");
    expect(r.stdout).toContain("pings: at most 2 per rolling second (exact)\n");
    expect(r.stdout).toContain("search [tier pro]: 600 per minute");
    expect(r.stdout).toMatch(
      /^login: all of: at most 5 per rolling minute \(exact\); and at most 20 per clock-aligned hour/m,
    );
  });

  it("accepts JSON and converts durations and rates", async () => {
    const path = tmp.file(
      "r.json",
      JSON.stringify({
        rules: {
          a: { algorithm: "sliding-log", limit: 100, windowMs: "15m" },
          b: { algorithm: "leaky-bucket", capacity: 5, leakPerSecond: "120/min" },
        },
      }),
    );
    const r = await run(["check-config", path]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      "a: at most 100 per rolling 15 minutes (exact)\nb: drains 2 per second; queues up to 5 (admitted requests wait delayMs)\n",
    );
  });

  it("rejects invalid files naming the rule and the field, exit 1", async () => {
    const cases: Array<[string, RegExp]> = [
      [
        "rules:\n  api: { algorithm: token-bucket, capacity: 0, refillPerSecond: 1 }\n",
        /rule "api": capacity must be a positive integer \(got 0\)/,
      ],
      [
        "rules:\n  api: { algorithm: fixed-window, limit: 5, windowMs: soon }\n",
        /rule "api": windowMs must be a duration .* \(got "soon"\)/,
      ],
      [
        "rules:\n  api: { algorithm: gcra, limit: 5, periodMs: 1s, colour: red }\n",
        /rule "api": unknown field `colour`/,
      ],
      [
        "rules:\n  api:\n    - { algorithm: fixed-window, limit: 5, windowMs: 1s }\n    - { algorithm: fixed-window, limit: -1, windowMs: 1s }\n",
        /rule "api": \[1\] limit must be a positive integer \(got -1\)/,
      ],
      [
        "rules:\n  api:\n    spec: { algorithm: fixed-window, limit: 5, windowMs: 1s }\n    tiers: { pro: { algorithm: nope } }\n",
        /rule "api" tier "pro": algorithm must be one of/,
      ],
      ["rules: [\n", /not valid YAML/],
      ["limits: {}\n", /unknown top-level key `limits`/],
    ];
    for (const [text, message] of cases) {
      const r = await run(["check-config", tmp.file("bad.yaml", text)]);
      expect(r.status, text).toBe(1);
      expect(r.stderr, text).toMatch(message);
      expect(r.stdout).toBe("");
    }
  });

  it("exits 1 for a missing file and 2 without one", async () => {
    const missing = await run(["check-config", "/nonexistent.yaml"]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("cannot read rules file");
    expect((await run(["check-config"])).status).toBe(2);
  });
});

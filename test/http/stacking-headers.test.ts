// Headers through a real Express app: sluice stacked after express-rate-limit's draft-8 headers
// appends to its Structured Fields lists (not replacing them), and figures too large for a
// Structured Fields Integer (15 digits) are clamped, so every value still parses.
import express from "express";
import { rateLimit as erl } from "express-rate-limit";
import { ManualClock } from "sluice";
import { rateLimit } from "sluice/express";
import { parseList } from "structured-headers";
import { afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serve(app: express.Express): Promise<string> {
  app.get("/", (_req, res) => {
    res.send("ok");
  });
  const served = await listening(app.listen(0, "127.0.0.1"));
  close = served.close;
  return served.url;
}

/** The list's members as [name, params] (parsing must succeed). */
const members = (value: string | null) =>
  parseList(value ?? "").map(([item, params]) => [String(item), Object.fromEntries(params)] as const);

describe("stacked after express-rate-limit (draft-8)", () => {
  test("both libraries' policies and figures reach the client, in order", async () => {
    const app = express();
    app.use(erl({ windowMs: 60_000, limit: 100, standardHeaders: "draft-8", legacyHeaders: false }));
    app.use(rateLimit({ spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 }, policyName: "api" }));
    const url = await serve(app);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    const policy = res.headers.get("ratelimit-policy");
    expect(policy).toMatch(/^"100-in-1min"; q=100; w=60; pk=:[^:]+:, "api";q=5;w=1$/);
    expect(members(policy).map(([name]) => name)).toEqual(["100-in-1min", "api"]);
    expect(members(res.headers.get("ratelimit"))).toEqual([
      ["100-in-1min", { r: 99, t: 60 }],
      ["api", { r: 4, t: 1 }],
    ]);
  });
});

describe("figures beyond 15 digits", () => {
  test("gcra 1e15 per 35 years: quota and remaining clamped to 999999999999999, and parseable", async () => {
    const app = express();
    app.use(
      rateLimit({
        spec: { algorithm: "gcra", limit: 1e15, periodMs: 2 ** 50 },
        policyName: "huge",
        clock: new ManualClock(1_800_000_000_000),
      }),
    );
    const url = await serve(app);
    const res = await fetch(url);
    expect(members(res.headers.get("ratelimit-policy"))).toEqual([
      ["huge", { q: 999_999_999_999_999, w: Math.ceil(2 ** 50 / 1000) }],
    ]);
    expect(members(res.headers.get("ratelimit"))).toEqual([["huge", { r: 999_999_999_999_999, t: 1 }]]);
  });

  test("gcra 1e9/min at today's epoch: remaining is limit − 1, not above the limit", async () => {
    const app = express();
    app.use(
      rateLimit({
        spec: { algorithm: "gcra", limit: 1e9, periodMs: 60_000 },
        policyName: "api",
        clock: new ManualClock(1_800_000_000_000),
      }),
    );
    const url = await serve(app);
    const res = await fetch(url);
    expect(res.headers.get("ratelimit")).toBe('"api";r=999999999;t=1');
  });
});

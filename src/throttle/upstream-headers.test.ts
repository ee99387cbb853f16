// What an upstream's answer says about when to come back: a table of real-world answers at a
// fixed instant (GitHub, IETF drafts 6/7/11, OpenAI, Discord, plain 429s).
import { describe, expect, it } from "vitest";
import { readUpstream, resetToMs, retryAfterMs } from "./upstream-headers.ts";

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const BOUNDS = { defaultPauseMs: 1000, maxPauseMs: 3_600_000 };
const read = (status: number | undefined, headers: Record<string, string>) =>
  readUpstream(status, new Headers(headers), NOW, BOUNDS);

describe("readUpstream", () => {
  it.each([
    ["429 Retry-After seconds", 429, { "retry-after": "30" }, 30_000, "retry-after"],
    ["503 Retry-After seconds", 503, { "Retry-After": "2" }, 2000, "retry-after"],
    // A date names a second; the window may end anywhere in it: read as the next whole second.
    ["429 Retry-After HTTP date", 429, { "retry-after": new Date(NOW + 90_000).toUTCString() }, 91_000, "retry-after"],
    [
      "429 Retry-After date of a window ending mid-second: not before its end",
      429,
      { "retry-after": new Date(NOW + 90_370).toUTCString() },
      91_000,
      "retry-after",
    ],
    ["429 Retry-After in the past", 429, { "retry-after": new Date(NOW - 5000).toUTCString() }, 1000, "status"],
    ["200 Retry-After is not a pause", 200, { "retry-after": "30" }, 0, undefined],
    ["301 Retry-After is not a pause", 301, { "retry-after": "30" }, 0, undefined],
    ["429 with nothing: the default pause", 429, {}, 1000, "status"],
    ["503 with nothing: an outage, not a limit", 503, {}, 0, undefined],
    ["draft-11 RateLimit exhausted", 200, { ratelimit: '"default";r=0;t=42' }, 42_000, "ratelimit"],
    ["draft-11 RateLimit with quota left", 200, { ratelimit: '"default";r=3;t=42' }, 0, undefined],
    [
      "draft-11 two policies, one exhausted",
      200,
      { ratelimit: '"burst";r=5;t=1, "daily";r=0;t=3600' },
      3_600_000,
      "ratelimit",
    ],
    ["draft-7 RateLimit", 200, { ratelimit: "limit=100, remaining=0, reset=12" }, 12_000, "ratelimit"],
    [
      "draft-6 RateLimit-Remaining/-Reset",
      200,
      { "ratelimit-remaining": "0", "ratelimit-reset": "7" },
      7000,
      "ratelimit",
    ],
    [
      "GitHub: X-RateLimit-Reset in epoch seconds",
      403,
      { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String((NOW + 600_000) / 1000) },
      601_000,
      "x-ratelimit",
    ],
    [
      "epoch ms reset",
      200,
      { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW + 4000) },
      4000,
      "x-ratelimit",
    ],
    ["delta seconds reset", 200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "20" }, 20_000, "x-ratelimit"],
    ["remaining above 0: no pause", 200, { "x-ratelimit-remaining": "1", "x-ratelimit-reset": "20" }, 0, undefined],
    [
      "Discord: X-RateLimit-Reset-After",
      200,
      { "x-ratelimit-remaining": "0", "x-ratelimit-reset-after": "1.25", "x-ratelimit-reset": "1" },
      1250,
      "x-ratelimit",
    ],
    [
      "OpenAI: tokens exhausted, Go durations",
      200,
      {
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
        "x-ratelimit-remaining-requests": "5",
      },
      360_000,
      "x-ratelimit",
    ],
    [
      "OpenAI: ms duration",
      429,
      { "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms" },
      20,
      "x-ratelimit",
    ],
    [
      "several say so: the longest wins",
      429,
      { "retry-after": "5", ratelimit: '"default";r=0;t=9' },
      9000,
      "ratelimit",
    ],
    ["a pause past maxPauseMs is capped", 429, { "retry-after": "99999999" }, 3_600_000, "retry-after"],
    ["an unreadable Retry-After: the default", 429, { "retry-after": "soon" }, 1000, "status"],
  ] as const)("%s", (_name, status, headers, pauseMs, source) => {
    const hint = read(status, headers);
    expect(hint.pauseMs).toBe(pauseMs);
    expect(hint.source).toBe(source);
  });

  it("reports what is left and the policies", () => {
    const hint = read(200, {
      ratelimit: '"burst";r=5;t=1, "daily";r=40;t=3600',
      "ratelimit-policy": '"burst";q=10;w=1, "daily";q=5000;w=86400',
    });
    expect(hint.remaining).toBe(5);
    expect(hint.policies).toEqual([
      { name: "burst", quota: 10, windowMs: 1000 },
      { name: "daily", quota: 5000, windowMs: 86_400_000 },
    ]);
  });

  it("reads plain header objects in any case (Node, axios, got)", () => {
    const hint = readUpstream(429, { "Retry-After": "3", "X-Other": ["a", "b"] }, NOW, BOUNDS);
    expect(hint).toMatchObject({ pauseMs: 3000, source: "retry-after" });
  });

  it("tells epoch seconds, epoch ms and deltas apart", () => {
    expect(resetToMs(60, NOW)).toBe(60_000);
    // Whole epoch seconds: the end of that second (a truncated reset is not retried early).
    expect(resetToMs(NOW / 1000 + 60, NOW)).toBe(61_000);
    expect(resetToMs(NOW / 1000 + 60.25, NOW)).toBe(60_250);
    expect(resetToMs(NOW + 60_000, NOW)).toBe(60_000);
    expect(retryAfterMs("1.5", NOW)).toBe(1500);
    expect(retryAfterMs("nonsense", NOW)).toBeUndefined();
  });
});

describe("a headers getter answering numbers or arrays (some clients do)", () => {
  it("reads them as text, as the plain-object form is", () => {
    const values: Record<string, unknown> = { "x-ratelimit-remaining": [0], "x-ratelimit-reset": 3 };
    const hint = readUpstream(429, { get: (name: string) => values[name] as string | undefined }, 0, {
      defaultPauseMs: 1000,
      maxPauseMs: 3_600_000,
    });
    expect([hint.remaining, hint.pauseMs]).toEqual([0, 3000]);
  });
});

// Obeying the upstream: `observe` on a ManualClock (a table of answers → pauses), and
// `throttle.fetch` against a real local server with its own limit (test/support/upstream-server.mjs).
import { createThrottle, ManualClock, MemoryStore } from "sluice";
import { afterEach, describe, expect, it } from "vitest";
import { startUpstream, type Upstream } from "../../test/support/upstream-server.mjs";

const T0 = Date.UTC(2026, 11, 7);
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("throttle.observe", () => {
  it.each([
    ["a Fetch Response", new Response("", { status: 429, headers: { "retry-after": "2" } })],
    ["a Node/axios-style response", { status: 429, headers: { "Retry-After": "2" } }],
    ["got-style statusCode", { statusCode: 429, headers: { "retry-after": "2" } }],
    ["headers alone (RateLimit exhausted)", new Headers({ ratelimit: '"default";r=0;t=2' })],
  ])("pauses the key as %s asks, for every throttle on the store", async (_name, answer) => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const rate = { algorithm: "gcra", limit: 100, periodMs: 1000 } as const;
    const a = createThrottle({ name: "api", rate, store, clock });
    const b = createThrottle({ name: "api", rate, store, clock });
    const pauses: number[] = [];
    a.on("pause", (e) => pauses.push(e.ms));
    const hint = await a.observe("github", answer);
    expect(hint.pauseMs).toBe(2000);
    expect(pauses).toEqual([2000]);
    const started: string[] = [];
    void a.schedule(() => started.push("a"), { key: "github" });
    void b.schedule(() => started.push("b"), { key: "github" });
    void b.schedule(() => started.push("other key"), { key: "npm" });
    expect(started).toEqual(["other key"]);
    clock.advance(1999);
    await settle();
    expect(started).toEqual(["other key"]);
    clock.advance(1);
    await settle();
    expect(started.sort()).toEqual(["a", "b", "other key"]);
  });

  it("does not pause on an answer with quota left", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ rate: { algorithm: "gcra", limit: 10, periodMs: 1000 }, clock });
    const hint = await throttle.observe("k", { status: 200, headers: { "x-ratelimit-remaining": "7" } });
    expect(hint).toMatchObject({ pauseMs: 0, remaining: 7 });
    let ran = false;
    void throttle.schedule(() => (ran = true), { key: "k" });
    expect(ran).toBe(true);
  });
});

describe("throttle.fetch against an upstream with its own limit", () => {
  let upstream: Upstream | undefined;
  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });

  it.each(["retry-after", "ratelimit", "x-ratelimit"] as const)(
    "%s: at most one 429 per upstream window, and every request gets through",
    async (mode) => {
      upstream = await startUpstream({ limit: 4, windowMs: 1000, mode });
      // Twice the upstream's rate: without obeying it, half the requests would be refused.
      const throttle = createThrottle({
        rate: { algorithm: "gcra", limit: 8, periodMs: 1000, burst: 1 },
        concurrency: 1,
      });
      const url = upstream.url;
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => throttle.fetch(url, { headers: { "x-job": String(i) } })),
      );
      expect(answers.map((r) => r.status)).toEqual(new Array(12).fill(200));
      await Promise.all(answers.map((r) => r.text()));
      const refused = upstream.log.filter((e) => e.status === 429);
      const perWindow = new Map<number, number>();
      for (const e of refused) perWindow.set(e.window, (perWindow.get(e.window) ?? 0) + 1);
      expect([...perWindow.values()].every((n) => n === 1)).toBe(true);
      // A refused request is sent again before the requests queued behind it.
      const firstTry = upstream.log.filter((e) => e.status === 200).map((e) => Number(e.job));
      expect(firstTry).toEqual([...firstTry].sort((x, y) => x - y));
      await throttle.close();
    },
  );

  it("after `retries` 429s the caller gets the 429", async () => {
    upstream = await startUpstream({ limit: 0, windowMs: 1000 });
    const throttle = createThrottle({ concurrency: 1, retries: 1, maxPauseMs: 50 });
    const answer = await throttle.fetch(upstream.url);
    expect(answer.status).toBe(429);
    await answer.text();
    expect(upstream.log.length).toBe(2);
    await throttle.close();
  });
});

/**
 * The shared suite for the middleware features of SPEC §10 and §13, run against every adapter
 * on a real server: `name`, key namespaces, unknown options, `count` modes (thrown handlers,
 * aborted clients, streamed responses), allow/deny lists, the decision on the request,
 * stacked limiters, unknown tiers.
 */
import { createHash } from "node:crypto";
import { type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { afterEach, describe, expect, test } from "vitest";
import { type Adapter, type Options, parseRateLimit, type Served } from "./conformance.ts";

const fixed = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 60_000 }) as const;

/** The feature suite for one adapter. */
/** What an adapter cannot do by design, so the suite leaves those cases out by name. */
export interface FeatureLimits {
  /**
   * False for adapters that apply one limit per route (NestJS: a route's `@RateLimit`
   * replaces the module's; several windows are an array spec), so there is no stack to merge.
   */
  stacking?: boolean;
}

export function features(name: string, adapter: Adapter, limits: FeatureLimits = {}): void {
  const stacked = limits.stacking === false ? test.skip : test;
  describe(`${name}: features`, () => {
    const running: Served[] = [];
    const start = async (options: Options | Options[]) => {
      const served = await adapter.serve(options);
      running.push(served);
      return served;
    };
    afterEach(async () => {
      await Promise.all(running.splice(0).map((s) => s.close()));
    });
    const status = async (url: string, init?: RequestInit) => {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      return res.status;
    };

    describe("identity", () => {
      test("`name` separates two middlewares with one spec on one store; without it they share", async () => {
        const store = new MemoryStore();
        const clock = new ManualClock(0);
        const login = await start({ spec: fixed(2), store, clock, name: "login" });
        const signup = await start({ spec: fixed(2), store, clock, name: "signup" });
        expect([await status(login.url), await status(login.url), await status(login.url)]).toEqual([200, 200, 429]);
        const res = await fetch(signup.url);
        expect(res.status).toBe(200);
        // The name is the policy name too, so stacked or logged limits say which is which.
        expect(res.headers.get("ratelimit-policy")).toBe('"signup";q=2;w=60');

        const shared = new MemoryStore();
        const a = await start({ spec: fixed(2), store: shared, clock });
        const b = await start({ spec: fixed(2), store: shared, clock });
        expect([await status(a.url), await status(a.url)]).toEqual([200, 200]);
        expect(await status(b.url)).toBe(429);
      });

      test("unknown options are refused at construction, naming the option", async () => {
        await expect(start({ spec: fixed(1), trustproxy: 1 })).rejects.toThrow(
          /unknown rateLimit option `trustproxy` \(did you mean `trustProxy`\?\)/,
        );
        await expect(start({ spec: fixed(1), windowMS: 1000 })).rejects.toThrow(
          /unknown rateLimit option `windowMS` \(`windowMs` belongs inside `spec`\)/,
        );
        await expect(start({ spec: fixed(1), count: "errors" })).rejects.toThrow(
          /`count` must be one of .*got "errors"/,
        );
      });

      test("a client sending \"sha256:<victim's hash>\" as its key does not spend the victim's quota", async () => {
        const shown: string[] = [];
        const { url } = await start({
          spec: fixed(1),
          clock: new ManualClock(0),
          key: (request: unknown) => adapter.header(request, "x-key"),
          onDecision: (_r: unknown, _d: Decision, _n: string, info: { key: string }) => shown.push(info.key),
        });
        const victim = "v".repeat(300);
        const hash = createHash("sha256").update(victim).digest("base64url");
        const as = (key: string) => status(url, { headers: { "x-key": key } });
        expect(await as(`sha256:${hash}`)).toBe(200);
        expect(await as(`h:${hash}`)).toBe(200);
        expect(await as(victim)).toBe(200);
        expect(await as(victim)).toBe(429);
        expect(shown[2]).toBe(`sha256:${hash}`); // logs show the hashed form
        // A key function returning undefined keys by address, in a namespace no chosen key reaches.
        expect(await as("127.0.0.1")).toBe(200);
        expect(await status(url)).toBe(200);
        expect(await status(url)).toBe(429);
      });
    });

    describe("count", () => {
      test('"failed": successful requests are given back, failures count (login brute force)', async () => {
        const { url } = await start({ spec: fixed(2), clock: new ManualClock(0), count: "failed" });
        for (let i = 0; i < 4; i++) expect(await status(`${url}/status/200`)).toBe(200);
        expect(await status(`${url}/status/401`)).toBe(401);
        expect(await status(`${url}/status/500`)).toBe(500);
        expect(await status(`${url}/status/200`)).toBe(429);
      });

      test('"succeeded": failed requests are given back', async () => {
        const { url } = await start({ spec: fixed(2), clock: new ManualClock(0), count: "succeeded" });
        for (let i = 0; i < 4; i++) expect(await status(`${url}/status/404`)).toBe(404);
        expect(await status(`${url}/status/201`)).toBe(201);
        expect(await status(`${url}/status/200`)).toBe(200);
        expect(await status(`${url}/status/404`)).toBe(429);
      });

      test("a handler that throws did not succeed", async () => {
        const failed = await start({ spec: fixed(1), clock: new ManualClock(0), count: "failed" });
        expect(await status(`${failed.url}/throw`)).toBe(500);
        expect(await status(`${failed.url}/status/200`)).toBe(429);
        const succeeded = await start({ spec: fixed(1), clock: new ManualClock(0), count: "succeeded" });
        for (let i = 0; i < 3; i++) expect(await status(`${succeeded.url}/throw`)).toBe(500);
        expect(await status(`${succeeded.url}/status/200`)).toBe(200);
        expect(await status(`${succeeded.url}/status/200`)).toBe(429);
      });

      test("a streamed response counts by how it ended, with its whole body", async () => {
        const { url } = await start({ spec: fixed(1), clock: new ManualClock(0), count: "failed" });
        for (let i = 0; i < 3; i++) {
          const res = await fetch(`${url}/stream`);
          expect([res.status, await res.text()]).toEqual([200, "ok"]);
        }
      });

      test.each([
        ["succeeded", 200],
        ["failed", 429],
      ])('a client that aborts did not succeed (count "%s")', async (count, after) => {
        const served = await start({ spec: fixed(1), clock: new ManualClock(0), count });
        expect(served.hang).toBeDefined();
        const hang = served.hang as NonNullable<Served["hang"]>;
        const controller = new AbortController();
        const hung = fetch(`${served.url}/hang`, { signal: controller.signal });
        // Abort only once the request is in the handler: the server has counted it.
        await hang.started;
        controller.abort();
        await expect(hung).rejects.toThrow();
        await hang.closed;
        expect(await status(`${served.url}/status/200`)).toBe(after);
      });

      test.each([
        // count, countOn, what the handler answered after its client left, the next request
        ["succeeded", undefined, 200, 200],
        ["succeeded", "response", 200, 200],
        ["failed", undefined, 200, 429],
        ["succeeded", "handler", 200, 429],
        ["succeeded", "handler", 500, 200],
        ["failed", "handler", 200, 200],
        ["failed", "handler", 500, 429],
      ])(
        'count "%s", countOn %s: a handler answering %i after its client left',
        async (count, countOn, code, after) => {
          const served = await start({ spec: fixed(1), clock: new ManualClock(0), count, countOn });
          const hang = served.hang as NonNullable<Served["hang"]>;
          const controller = new AbortController();
          const hung = fetch(`${served.url}/hang/${code}`, { signal: controller.signal });
          await hang.started; // counted, and the handler runs
          controller.abort();
          await expect(hung).rejects.toThrow();
          await hang.closed; // the handler answered once the client was gone
          expect(await status(`${served.url}/status/200`)).toBe(after);
        },
      );

      test("countOn takes only its two values", async () => {
        await expect(start({ spec: fixed(1), count: "succeeded", countOn: "client" })).rejects.toThrow(
          /`countOn` must be one of .*got "client"/,
        );
      });

      test("requestWasSuccessful decides what succeeded", async () => {
        const { url } = await start({
          spec: fixed(1),
          clock: new ManualClock(0),
          count: "failed",
          requestWasSuccessful: (request: unknown) => adapter.path(request).startsWith("/status/4"),
        });
        for (let i = 0; i < 3; i++) expect(await status(`${url}/status/404`)).toBe(404);
        expect(await status(`${url}/status/200`)).toBe(200);
        expect(await status(`${url}/status/404`)).toBe(429);
      });
    });

    describe("allow and deny lists", () => {
      test("allowList: never counted nor given headers; denyList: 403 problem+json", async () => {
        const allowed = await start({
          spec: fixed(1),
          clock: new ManualClock(0),
          allowList: ["10.0.0.0/8", "127.0.0.0/8"],
        });
        for (let i = 0; i < 3; i++) {
          const res = await fetch(allowed.url);
          expect(res.status).toBe(200);
          expect(res.headers.get("ratelimit")).toBeNull();
        }
        const denied = await start({ spec: fixed(5), clock: new ManualClock(0), denyList: ["::ffff:127.0.0.1"] });
        const res = await fetch(denied.url);
        expect(res.status).toBe(403);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(res.headers.get("retry-after")).toBeNull();
        expect(await res.json()).toMatchObject({ status: 403, title: "Forbidden" });
      });

      test("matched against the client address as trustProxy resolves it, IPv4 and IPv6", async () => {
        const { url } = await start({
          spec: fixed(1),
          clock: new ManualClock(0),
          trustProxy: ["127.0.0.1"],
          allowList: ["203.0.113.0/24", "2001:db8:aaaa::/48"],
          denyList: ["198.51.100.7", "2001:db8:bad::/48"],
        });
        const from = (xff: string) => status(url, { headers: { "x-forwarded-for": xff } });
        expect(await from("198.51.100.7")).toBe(403);
        expect(await from("2001:db8:bad:1::5")).toBe(403);
        expect(await from("198.51.100.8")).toBe(200);
        for (let i = 0; i < 3; i++) expect(await from("::ffff:203.0.113.9")).toBe(200);
        for (let i = 0; i < 3; i++) expect(await from("2001:db8:aaaa:ffff::1")).toBe(200);
        // A client writing an allowed address left of the real one gains nothing.
        expect(await from("203.0.113.9, 198.51.100.8")).toBe(429);
      });
    });

    describe("the decision on the request, stacked limiters", () => {
      test("the handler sees the decision", async () => {
        const { url } = await start({ spec: fixed(3), clock: new ManualClock(0) });
        const decision = await (await fetch(`${url}/decision`)).json();
        expect(decision).toMatchObject({ allowed: true, limit: 3, remaining: 2, retryAfterMs: 0 });
      });

      stacked(
        "two limiters on one route: both policies in one draft-11 list; the denying one's Retry-After",
        async () => {
          const clock = new ManualClock(0);
          const { url } = await start([
            { spec: fixed(5), clock, name: "hourly" },
            { spec: { algorithm: "fixed-window", limit: 2, windowMs: 10_000 }, clock, name: "burst" },
          ]);
          const first = await fetch(`${url}/decision`);
          expect(parseRateLimit(first.headers.get("ratelimit-policy"))).toEqual({
            hourly: { q: 5, w: 60 },
            burst: { q: 2, w: 10 },
          });
          expect(parseRateLimit(first.headers.get("ratelimit"))).toEqual({
            hourly: { r: 4, t: 60 },
            burst: { r: 1, t: 10 },
          });
          expect(await first.json()).toMatchObject({ remaining: 1, limit: 2 }); // the tightest
          await fetch(url);
          clock.set(4000);
          const denied = await fetch(url);
          expect(denied.status).toBe(429);
          expect(denied.headers.get("retry-after")).toBe("6");
          expect(parseRateLimit(denied.headers.get("ratelimit"))).toEqual({
            hourly: { r: 2, t: 56 },
            burst: { r: 0, t: 6 },
          });
        },
      );

      stacked("stacked limiters with the same policy name get distinct names", async () => {
        const clock = new ManualClock(0);
        const { url } = await start([
          { spec: fixed(5), clock, name: "a" },
          { spec: fixed(3), clock, name: "b", policyName: "a" },
        ]);
        const res = await fetch(url);
        expect(parseRateLimit(res.headers.get("ratelimit-policy"))).toEqual(
          expect.objectContaining({ a: expect.anything(), "a-2": expect.anything() }),
        );
        expect(Object.keys(parseRateLimit(res.headers.get("ratelimit"))).sort()).toEqual(["a", "a-2"]);
      });
    });

    describe("bans", () => {
      test("repeated denials ban the key: 403 problem+json with Retry-After for the ban's time left", async () => {
        const clock = new ManualClock(0);
        const { url } = await start({
          spec: fixed(1),
          clock,
          ban: { after: 2, withinMs: 60_000, forMs: 600_000 },
        });
        expect(await status(url)).toBe(200);
        const limited = await fetch(url);
        expect([limited.status, limited.headers.get("retry-after")]).toEqual([429, "60"]);
        const banned = await fetch(url);
        expect([banned.status, banned.headers.get("retry-after")]).toEqual([403, "600"]);
        // As forward-auth answers: no cache keeps a ban (or a 429) for others behind it.
        expect([limited.headers.get("cache-control"), banned.headers.get("cache-control")]).toEqual([
          "no-store",
          "no-store",
        ]);
        expect(banned.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(await banned.json()).toEqual({
          type: "urn:sluice:problem:banned",
          title: "Banned",
          status: 403,
          detail: "Too many requests were refused; this client is banned for 600 more seconds.",
        });
        clock.set(60_000); // a new window, but still banned
        const still = await fetch(url);
        expect([still.status, still.headers.get("retry-after")]).toEqual([403, "540"]);
        clock.set(600_000);
        expect(await status(url)).toBe(200);
      });

      test("a service rule's ban answers 403 too; `ban` with `service` is refused", async () => {
        const service = new RateLimiterService(new ManualClock(0)).addRule("api", fixed(1), {
          ban: { after: 1, withinMs: 1000, forMs: 120_000 },
        });
        const { url } = await start({ service, rule: "api" });
        expect(await status(url)).toBe(200);
        const banned = await fetch(url);
        expect([banned.status, banned.headers.get("retry-after")]).toEqual([403, "120"]);
        await expect(start({ service, rule: "api", ban: { after: 1, withinMs: 1, forMs: 1 } })).rejects.toThrow(
          /`ban` belongs to `spec` limiters/,
        );
      });
    });

    describe("tiers", () => {
      const service = () =>
        new RateLimiterService(new ManualClock(0)).addRule("api", fixed(2), { tiers: { pro: fixed(10) } });

      test("an unknown tier is a 400 problem naming it, not a 500", async () => {
        const { url } = await start({
          service: service(),
          rule: "api",
          tier: (request: unknown) => adapter.header(request, "x-tier"),
        });
        const res = await fetch(url, { headers: { "x-tier": "gold" } });
        expect(res.status).toBe(400);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        // Names no other tier: a client could otherwise choose one through the same header.
        expect((await res.json()).detail).toBe('Unknown tier "gold" for rule "api".');
        expect(await status(url, { headers: { "x-tier": "pro" } })).toBe(200);
      });

      test('onUnknownTier "base" applies the rule\'s own spec', async () => {
        const { url } = await start({
          service: service(),
          rule: "api",
          onUnknownTier: "base",
          tier: (request: unknown) => adapter.header(request, "x-tier"),
        });
        const res = await fetch(url, { headers: { "x-tier": "gold" } });
        expect(res.status).toBe(200);
        expect(res.headers.get("ratelimit-policy")).toBe('"api";q=2;w=60');
      });
    });
  });
}

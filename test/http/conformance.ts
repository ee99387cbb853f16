/**
 * One behaviour suite every HTTP adapter must pass, over a real server on loopback and Node's
 * fetch. Each adapter's test file supplies `serve(options)` and how to read its request type.
 */

import { type Decision, ManualClock } from "sluice";
import type { RateLimitHandles } from "sluice/http";
import { parseList, serializeList } from "structured-headers";
import { afterEach, describe, expect, test } from "vitest";
import type { Listening } from "../support/listening.ts";

/** A running server (the harness of test/support/listening.ts), with what the suite reads of it. */
export interface Served extends Listening {
  /** The first `/hang` request: `started` once its handler runs, `closed` once the server saw the client leave. */
  hang?: { started: Promise<void>; closed: Promise<void> };
  /** The handles (`reset`/`peek`/`get`) of the (first) middleware: what a user's code holds. */
  handles?: RateLimitHandles | undefined;
}

/** Middleware options as the tests write them (`customLimited: true` asks for the adapter's onLimited). */
export type Options = Record<string, unknown>;

/**
 * What a test server's handler does, by path (behind the middlewares): `/status/NNN` answers
 * NNN "ok"; `/throw` throws (the framework answers 500); `/stream` streams "o" then "k";
 * `/hang` never answers (see `Served.hang`); `/hang/NNN` answers NNN once the client has left
 * (work that ran after its client hung up); `/decision` answers
 * the decision on the request as JSON (`null` when there is none); anything else "ok".
 */
export type Route =
  | { kind: "status"; code: number }
  | { kind: "throw" }
  | { kind: "stream" }
  | { kind: "hang"; late?: number }
  | { kind: "decision" }
  | { kind: "ok" };

/** The route of a request path (query ignored). */
export function routeOf(path: string): Route {
  const p = path.split("?")[0] ?? "";
  const status = /^\/status\/(\d{3})$/.exec(p);
  if (status !== null) return { kind: "status", code: Number(status[1]) };
  const late = /^\/hang\/(\d{3})$/.exec(p);
  if (late !== null) return { kind: "hang", late: Number(late[1]) };
  if (p === "/throw" || p === "/stream" || p === "/hang" || p === "/decision") return { kind: p.slice(1) } as Route;
  return { kind: "ok" };
}

/** A body of two chunks, "o" then "k", each pulled separately (a streamed response). */
export function twoChunks(): ReadableStream<Uint8Array> {
  const chunks = ["o", "k"];
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(new TextEncoder().encode(next));
    },
  });
}

/** A promise with its resolve function outside. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * What a test server's `/hang` handler signals: `enter()` when it runs, `leave()` when the
 * client is gone (after answering, for `/hang/NNN`). `closed` resolves a macrotask later, so
 * what the middleware does once the handler answered (a `count` refund) has happened by then.
 */
export function hangSignals() {
  const started = deferred();
  const closed = deferred();
  return {
    enter: started.resolve,
    leave: () => void setImmediate(closed.resolve),
    served: { started: started.promise, closed: closed.promise },
  };
}

/** How an adapter is exercised. */
export interface Adapter {
  /**
   * Starts a server answering the {@link Route}s behind the middleware built from `options`,
   * or behind several middlewares in order (stacked limiters) when given an array.
   */
  serve(options: Options | Options[]): Promise<Served>;
  /** Reads a request header from the adapter's request type (the object hooks receive). */
  header(request: unknown, name: string): string | undefined;
  /** The request path from the adapter's request type. */
  path(request: unknown): string;
}

/** A parsed draft-11 list: name → parameters. */
export function parseRateLimit(value: string | null): Record<string, Record<string, unknown>> {
  if (value === null) throw new Error("header missing");
  // Byte-exact: what we send is the canonical serialisation of what a parser reads.
  expect(serializeList(parseList(value))).toBe(value);
  const out: Record<string, Record<string, unknown>> = {};
  for (const [item, params] of parseList(value)) out[String(item)] = Object.fromEntries(params);
  return out;
}

const fixed = (limit: number) => ({ algorithm: "fixed-window" as const, limit, windowMs: 60_000 });

/** The behaviour suite for one adapter. */
export function conformance(name: string, adapter: Adapter): void {
  describe(`${name}: shared behaviour`, () => {
    let served: Served | undefined;
    const start = async (options: Record<string, unknown>) => {
      served = await adapter.serve(options);
      return served.url;
    };
    afterEach(async () => {
      await served?.close();
      served = undefined;
    });

    test("draft-11 headers on a passing request, then a 429 problem with Retry-After", async () => {
      const clock = new ManualClock(0);
      const url = await start({ spec: fixed(2), clock });
      const first = await fetch(`${url}/a`);
      expect(first.status).toBe(200);
      expect(await first.text()).toBe("ok");
      expect(first.headers.get("ratelimit-policy")).toBe('"default";q=2;w=60');
      expect(first.headers.get("ratelimit")).toBe('"default";r=1;t=60');
      expect(parseRateLimit(first.headers.get("ratelimit"))).toEqual({ default: { r: 1, t: 60 } });
      expect(first.headers.get("retry-after")).toBeNull();
      clock.set(30_000);
      expect(parseRateLimit((await fetch(`${url}/a`)).headers.get("ratelimit"))).toEqual({ default: { r: 0, t: 30 } });
      clock.set(45_500);
      const denied = await fetch(`${url}/a`);
      expect(denied.status).toBe(429);
      expect(denied.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(denied.headers.get("retry-after")).toBe("15");
      expect(parseRateLimit(denied.headers.get("ratelimit"))).toEqual({ default: { r: 0, t: 15 } });
      expect(await denied.json()).toEqual({
        type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
        title: "Request cannot be satisfied as assigned quota has been exceeded",
        status: 429,
        detail: "Too many requests; retry after 15 seconds.",
        "violated-policies": ["default"],
      });
    });

    const algorithms = [
      { algorithm: "fixed-window", limit: 2, windowMs: 1500 },
      { algorithm: "sliding-log", limit: 2, windowMs: 2300 },
      { algorithm: "sliding-window", limit: 3, windowMs: 1700 },
      { algorithm: "token-bucket", capacity: 2, refillPerSecond: 0.3 },
      { algorithm: "gcra", limit: 3, periodMs: 1000, burst: 2 },
    ];
    test.each(algorithms)("Retry-After is never earlier than the time to pass: %j", async (spec) => {
      const clock = new ManualClock(10_123);
      const seen: Decision[] = [];
      const url = await start({ spec, clock, onDecision: (_r: unknown, d: Decision) => seen.push(d) });
      let denied: Response | undefined;
      for (let i = 0; i < 10 && denied === undefined; i++) {
        const res = await fetch(url);
        if (res.status === 429) denied = res;
      }
      if (denied === undefined) throw new Error("never denied");
      const seconds = Number(denied.headers.get("retry-after"));
      const exact = (seen.at(-1) as Decision).retryAfterMs;
      expect(seconds).toBe(Math.ceil(exact / 1000));
      const t0 = clock.now();
      clock.set(t0 + exact - 1);
      expect((await fetch(url)).status).toBe(429);
      clock.set(t0 + seconds * 1000);
      expect((await fetch(url)).status).toBe(200);
    });

    test("a spoofed X-Forwarded-For from one socket stays one bucket when trustProxy is off", async () => {
      const keys: string[] = [];
      const url = await start({
        spec: fixed(2),
        clock: new ManualClock(0),
        onDecision: (_r: unknown, _d: Decision, _rule: string, info: { key: string }) => keys.push(info.key),
      });
      const statuses = [];
      for (const ip of ["1.1.1.1", "2.2.2.2", "3.3.3.3"]) {
        statuses.push((await fetch(url, { headers: { "x-forwarded-for": ip } })).status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(new Set(keys)).toEqual(new Set(["127.0.0.1"]));
    });

    test("with one trusted hop the rightmost forwarded address is the client", async () => {
      const keys: string[] = [];
      const url = await start({
        spec: fixed(1),
        clock: new ManualClock(0),
        trustProxy: 1,
        onDecision: (_r: unknown, _d: Decision, _rule: string, info: { key: string }) => keys.push(info.key),
      });
      const send = (xff: string) => fetch(url, { headers: { "x-forwarded-for": xff } }).then((r) => r.status);
      expect(await send("6.6.6.6, 203.0.113.5")).toBe(200);
      // The client rewrote its own part of the chain; the proxy's entry still identifies it.
      expect(await send("7.7.7.7, 203.0.113.5")).toBe(429);
      expect(await send("6.6.6.6, 203.0.113.6")).toBe(200);
      expect(await send("2001:db8:1:200::1")).toBe(200);
      expect(await send("2001:db8:1:2ff::9")).toBe(429); // same /56
      expect(await send("::ffff:203.0.113.6")).toBe(429); // IPv4-mapped = the IPv4 client
      expect(keys).toEqual([
        "203.0.113.5",
        "203.0.113.5",
        "203.0.113.6",
        "2001:db8:1:200::/56",
        "2001:db8:1:200::/56",
        "203.0.113.6",
      ]);
    });

    test("weighted costs; a cost above the limit is 429 without Retry-After", async () => {
      const url = await start({
        spec: fixed(10),
        clock: new ManualClock(0),
        cost: (request: unknown) => Number(adapter.header(request, "x-cost") ?? 1),
      });
      const send = (cost: number) => fetch(url, { headers: { "x-cost": String(cost) } });
      expect(parseRateLimit((await send(4)).headers.get("ratelimit"))).toEqual({ default: { r: 6, t: 60 } });
      expect(parseRateLimit((await send(5)).headers.get("ratelimit"))).toEqual({ default: { r: 1, t: 60 } });
      const tooMuch = await send(2);
      expect(tooMuch.status).toBe(429);
      expect(tooMuch.headers.get("retry-after")).toBe("60");
      const never = await send(11);
      expect(never.status).toBe(429);
      expect(never.headers.get("retry-after")).toBeNull();
      expect((await never.json()).detail).toMatch(/never/);
      expect((await send(1)).status).toBe(200);
    });

    test("a composite rule: one list member per part, violated-policies names the one that denied", async () => {
      const clock = new ManualClock(0);
      const url = await start({
        spec: [
          { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
          { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
        ],
        policyName: ["second", "minute"],
        clock,
      });
      const first = await fetch(url);
      expect(first.headers.get("ratelimit-policy")).toBe('"second";q=2;w=1, "minute";q=3;w=60');
      expect(parseRateLimit(first.headers.get("ratelimit"))).toEqual({
        second: { r: 1, t: 1 },
        minute: { r: 2, t: 60 },
      });
      await fetch(url);
      const perSecond = await fetch(url);
      expect(perSecond.status).toBe(429);
      expect((await perSecond.json())["violated-policies"]).toEqual(["second"]);
      clock.set(1000);
      expect((await fetch(url)).status).toBe(200);
      const perMinute = await fetch(url);
      expect(perMinute.status).toBe(429);
      expect(perMinute.headers.get("retry-after")).toBe("59");
      expect((await perMinute.json())["violated-policies"]).toEqual(["minute"]);
    });

    test("dryRun passes everything and reports the would-be decision in a header and onDecision", async () => {
      const decisions: boolean[] = [];
      const url = await start({
        spec: fixed(1),
        clock: new ManualClock(0),
        dryRun: true,
        onDecision: (_r: unknown, d: Decision, _rule: string, info: { dryRun: boolean; status: number }) => {
          expect(info).toMatchObject({ dryRun: true, status: 200 });
          decisions.push(d.allowed);
        },
      });
      const a = await fetch(url);
      const b = await fetch(url);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.headers.get("sluice-dry-run")).toBe("would-allow");
      expect(b.headers.get("sluice-dry-run")).toBe("would-deny");
      expect(b.headers.get("retry-after")).toBeNull();
      expect(parseRateLimit(b.headers.get("ratelimit"))).toEqual({ default: { r: 0, t: 60 } });
      expect(await b.text()).toBe("ok");
      expect(decisions).toEqual([true, false]);
    });

    test("skip: skipped requests are neither counted nor given headers", async () => {
      const url = await start({
        spec: fixed(1),
        clock: new ManualClock(0),
        skip: (request: unknown) => adapter.path(request).startsWith("/health"),
      });
      for (let i = 0; i < 3; i++) {
        const health = await fetch(`${url}/health`);
        expect(health.status).toBe(200);
        expect(health.headers.get("ratelimit")).toBeNull();
      }
      expect((await fetch(`${url}/api`)).status).toBe(200);
      expect((await fetch(`${url}/api`)).status).toBe(429);
    });

    test("onDecision gets the request, the decision and the rule name; async key and policyName", async () => {
      const calls: Array<[string, boolean, string]> = [];
      const url = await start({
        spec: fixed(1),
        clock: new ManualClock(0),
        policyName: "per-user",
        key: async (request: unknown) => `user:${adapter.header(request, "x-user")}`,
        onDecision: (request: unknown, d: Decision, rule: string) =>
          calls.push([adapter.header(request, "x-user") ?? "", d.allowed, rule]),
      });
      const as = (user: string) => fetch(url, { headers: { "x-user": user } });
      const a = await as("ann");
      expect(a.headers.get("ratelimit")).toBe('"per-user";r=0;t=60');
      expect((await as("bob")).status).toBe(200);
      expect((await as("ann")).status).toBe(429);
      expect(calls).toEqual([
        ["ann", true, "per-user"],
        ["bob", true, "per-user"],
        ["ann", false, "per-user"],
      ]);
    });

    test.each([
      ["draft-7", { "ratelimit-policy": "1;w=60", ratelimit: "limit=1, remaining=0, reset=60" }],
      [
        "draft-6",
        { "ratelimit-policy": "1;w=60", "ratelimit-limit": "1", "ratelimit-remaining": "0", "ratelimit-reset": "60" },
      ],
      ["legacy", { "x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "60" }],
      [false, {}],
    ])("headers: %j", async (format, expected) => {
      const url = await start({ spec: fixed(1), clock: new ManualClock(500), headers: format });
      const res = await fetch(url);
      const got = Object.fromEntries([...res.headers].filter(([k]) => /ratelimit/.test(k)));
      expect(got).toEqual(expected);
      const denied = await fetch(url);
      expect(denied.status).toBe(429);
      expect(denied.headers.get("retry-after")).toBe("60");
    });

    test("onLimited replaces the problem body; headers are still set", async () => {
      const url = await start({ spec: fixed(1), clock: new ManualClock(0), customLimited: true });
      await fetch(url);
      const res = await fetch(url);
      expect(res.status).toBe(429);
      expect(await res.text()).toBe("slow down");
      expect(res.headers.get("retry-after")).toBe("60");
      expect(res.headers.get("ratelimit")).toBe('"default";r=0;t=60');
    });

    describe(`${name}: handles and limits from the request`, () => {
      let served: Served | undefined;
      const start = async (options: Record<string, unknown>) => {
        served = await adapter.serve(options);
        if (served.handles === undefined) throw new Error(`${name}: serve() gave no handles`);
        return { url: served.url, handles: served.handles };
      };
      afterEach(async () => {
        await served?.close();
        served = undefined;
      });
      const status = async (url: string, headers: Record<string, string> = {}) =>
        (await fetch(url, { headers })).status;

      test("reset/peek/get by client address reach the state the middleware counts", async () => {
        const { url, handles } = await start({ spec: fixed(2), clock: new ManualClock(1_800_000_000_000) });
        expect((await handles.peek("127.0.0.1")).remaining).toBe(1);
        expect([await status(url), await status(url), await status(url)]).toEqual([200, 200, 429]);
        const peeked = await handles.peek("127.0.0.1");
        expect([peeked.allowed, peeked.remaining]).toEqual([false, 0]);
        // The address is normalised as the middleware does: an IPv4-mapped IPv6 peer is its IPv4.
        expect((await handles.peek("::ffff:127.0.0.1")).allowed).toBe(false);
        expect((await handles.get("127.0.0.1"))?.allowed).toBe(false);
        expect((await handles.peek("127.0.0.2")).remaining).toBe(1);
        await handles.reset("::ffff:127.0.0.1");
        expect((await handles.peek("127.0.0.1")).remaining).toBe(1);
        expect(await status(url)).toBe(200);
      });

      test("with a key option the handles take what it returns; { address } reaches the address fallback", async () => {
        const { url, handles } = await start({
          spec: fixed(1),
          clock: new ManualClock(0),
          key: (request: unknown) => adapter.header(request, "x-user"),
        });
        const alice = { "x-user": "alice" };
        expect([await status(url, alice), await status(url, alice)]).toEqual([200, 429]);
        expect([await status(url), await status(url)]).toEqual([200, 429]); // no header: keyed by address
        expect((await handles.peek("alice")).allowed).toBe(false);
        // "127.0.0.1" as a key is a key a client could choose: it is not the address's state.
        expect((await handles.peek("127.0.0.1")).allowed).toBe(true);
        expect((await handles.peek({ address: "127.0.0.1" })).allowed).toBe(false);
        await handles.reset("alice");
        expect(await status(url, alice)).toBe(200);
        expect(await status(url)).toBe(429);
        await handles.reset({ address: "127.0.0.1" });
        expect(await status(url)).toBe(200);
        expect(() => handles.peek(42 as never)).toThrow(/key string or \{ address \}.*42/);
      });

      test("spec as a function of the request: state per resolved rule shape, sync and async", async () => {
        const { url, handles } = await start({
          spec: async (request: unknown) => (adapter.header(request, "x-plan") === "pro" ? fixed(3) : fixed(1)),
          clock: new ManualClock(0),
        });
        const pro = { "x-plan": "pro" };
        expect([await status(url), await status(url)]).toEqual([200, 429]);
        // Same client, another shape: its own state, its own limit in the headers.
        const first = await fetch(url, { headers: pro });
        expect(first.headers.get("ratelimit-policy")).toBe('"default";q=3;w=60');
        expect([first.status, await status(url, pro), await status(url, pro), await status(url, pro)]).toEqual([
          200, 200, 200, 429,
        ]);
        expect((await handles.peek("127.0.0.1", { spec: fixed(1) })).allowed).toBe(false);
        expect((await handles.peek("127.0.0.1", { spec: fixed(3) })).remaining).toBe(0);
        await handles.reset("127.0.0.1"); // every shape
        expect(await status(url)).toBe(200);
        expect(await status(url, pro)).toBe(200);
      });

      test("a spec function that returns garbage, throws or rejects is answered 503, never a crash", async () => {
        const seen: Decision[] = [];
        const { url } = await start({
          spec: (request: unknown) => {
            const plan = adapter.header(request, "x-plan");
            if (plan === "throw") throw new Error("plan lookup failed");
            if (plan === "reject") return Promise.reject(new Error("plan service down"));
            if (plan === "bad") return { algorithm: "fixed-window", limit: -1, windowMs: 1000 };
            return fixed(5);
          },
          onDecision: (_r: unknown, d: Decision) => seen.push(d),
        });
        for (const plan of ["bad", "throw", "reject"]) {
          const res = await fetch(url, { headers: { "x-plan": plan } });
          expect(res.status).toBe(503);
          expect(res.headers.get("retry-after")).toBe("1");
          expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        }
        expect(seen.map((d) => (d.failure?.error as { code?: string } | undefined)?.code)).toEqual([
          "ERR_INVALID_SPEC",
          "ERR_INVALID_SPEC",
          "ERR_INVALID_SPEC",
        ]);
        expect(String(seen[0]?.failure?.error.message)).toMatch(/limit/);
        expect(String(seen[2]?.failure?.error.message)).toMatch(/plan service down/);
        expect(await status(url)).toBe(200); // the server is still there
      });
    });
  });
}

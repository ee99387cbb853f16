// sluice/http on Node's own http server: the shared suite, plus IPv6 over ::1, leaky-bucket
// delays, store failure policies and misconfiguration warnings.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Decision, ManualClock, MemoryStore, RateLimiterService, type Store } from "sluice";
import { rateLimit } from "sluice/http";
import { afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { canListen, skipTest } from "../support/skip.ts";
import { conformance, hangSignals, type Options, parseRateLimit, routeOf, type Served } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

/** Starts `server` on a loopback port of `host` and serves it through the one adapter harness. */
function listen(server: http.Server, host = "127.0.0.1"): Promise<Served> {
  server.listen(0, host);
  return listening(server, host);
}

function serveNode(options: Options | Options[], host?: string): Promise<Served> {
  const limits = (Array.isArray(options) ? options : [options]).map(({ customLimited, ...rest }) => {
    if (customLimited) rest.onLimited = (_req: IncomingMessage, res: ServerResponse) => res.end("slow down");
    return rateLimit(rest as never);
  });
  const hang = hangSignals();
  const server = http.createServer(async (req, res) => {
    try {
      for (const limit of limits) if (!(await limit(req, res))) return;
      const route = routeOf(req.url ?? "/");
      if (route.kind === "throw") throw new Error("handler failed");
      if (route.kind === "hang") {
        hang.enter();
        return void res.once("close", () => {
          if (route.late !== undefined) {
            res.statusCode = route.late;
            res.end("late");
          }
          hang.leave();
        });
      }
      if (route.kind === "decision") return void res.end(JSON.stringify(req.rateLimit ?? null));
      if (route.kind === "stream") {
        res.write("o");
        return void setImmediate(() => res.end("k"));
      }
      if (route.kind === "status") res.statusCode = route.code;
      res.end("ok");
    } catch (error) {
      res.statusCode = 500;
      res.end(String(error));
    }
  });
  return listen(server, host).then((served) => ({ ...served, hang: hang.served, handles: limits[0] }));
}

const nodeAdapter = {
  serve: (options: Options | Options[]) => serveNode(options),
  header: (request: unknown, name: string) => (request as IncomingMessage).headers[name] as string | undefined,
  path: (request: unknown) => (request as IncomingMessage).url ?? "/",
};
conformance("node http", nodeAdapter);
features("node http", nodeAdapter);
leases("node http", nodeAdapter);

describe("node http", () => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test("connect style (req, res, next) passes with next() and stays synchronous on the memory store", async () => {
    const limit = rateLimit({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      clock: new ManualClock(),
    });
    let synchronous = false;
    const server = http.createServer((req, res) => {
      let called = false;
      limit(req, res, (error?: unknown) => {
        called = true;
        res.end(error === undefined ? "ok" : "error");
      });
      // The in-process store decides without a promise: next has run (or the 429 was sent) already.
      synchronous = called || res.writableEnded;
    });
    served = await listen(server);
    expect(await (await fetch(served.url)).text()).toBe("ok");
    expect((await fetch(served.url)).status).toBe(429);
    expect(synchronous).toBe(true);
  });

  test("a real request over ::1 is keyed by its /56", async (ctx) => {
    // Only a missing IPv6 loopback skips (through the gate, so CI fails); any other error of
    // serveNode() fails the test.
    if (!(await canListen("::1"))) return skipTest(ctx, "the ::1 test", "this machine has no IPv6 loopback");
    const keys: string[] = [];
    served = await serveNode(
      {
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        onDecision: (_r: unknown, _d: Decision, _n: string, info: { key: string }) => keys.push(info.key),
      },
      "::1",
    );
    expect((await fetch(served.url)).status).toBe(200);
    expect(keys).toEqual(["::/56"]);
  });

  test("IPv4 clients of a dual-stack socket (::ffff:127.0.0.1) are keyed as IPv4", async (ctx) => {
    if (!(await canListen("::"))) return skipTest(ctx, "the dual-stack test", "no dual-stack socket on this machine");
    const keys: string[] = [];
    served = await serveNode(
      {
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        onDecision: (_r: unknown, _d: Decision, _n: string, info: { key: string }) => keys.push(info.key),
      },
      "::",
    );
    const port = new URL(served.url).port;
    await fetch(`http://127.0.0.1:${port}/`);
    expect(keys).toEqual(["127.0.0.1"]);
  });

  test("a leaky bucket delays admitted requests by delayMs (on the limiter's clock)", async () => {
    const clock = new ManualClock(0);
    // Waits for the second request's decision (an event), not for a stretch of real time.
    let decided: (d: Decision) => void = () => {};
    const decisions: Decision[] = [];
    served = await serveNode({
      spec: { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 1 },
      clock,
      onDecision: (_r: unknown, d: Decision) => {
        decisions.push(d);
        if (decisions.length === 2) decided(d);
      },
    });
    expect((await fetch(served.url)).status).toBe(200);
    let answered = false;
    const second = new Promise<Decision>((r) => {
      decided = r;
    });
    const queued = fetch(served.url).then((r) => {
      answered = true;
      return r;
    });
    expect(await second).toMatchObject({ allowed: true, delayMs: 1000 });
    // Decided and held: the delay runs on the limiter's (manual) clock, which has not moved.
    expect(answered).toBe(false);
    clock.advance(1000);
    expect((await queued).status).toBe(200);
  });

  test("honorDelay: false passes leaky-bucket admissions at once and reports delayMs", async () => {
    const clock = new ManualClock(0);
    const delays: number[] = [];
    served = await serveNode({
      spec: { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 1 },
      clock,
      honorDelay: false,
      onDecision: (_req: unknown, d: Decision) => delays.push(d.delayMs),
    });
    expect((await fetch(served.url)).status).toBe(200);
    expect((await fetch(served.url)).status).toBe(200);
    expect(delays).toEqual([0, 1000]);
  });

  test("service + rule + tier: policy per tier, rule name in headers", async () => {
    const service = new RateLimiterService(new ManualClock(0)).addRule(
      "api",
      { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
      { tiers: { pro: { algorithm: "fixed-window", limit: 100, windowMs: 60_000 } } },
    );
    served = await serveNode({
      service,
      rule: "api",
      tier: (req: IncomingMessage) => (req.headers["x-tier"] as string | undefined) ?? undefined,
    });
    const free = await fetch(served.url);
    expect(free.headers.get("ratelimit-policy")).toBe('"api";q=2;w=60');
    const pro = await fetch(served.url, { headers: { "x-tier": "pro" } });
    expect(pro.headers.get("ratelimit-policy")).toBe('"api";q=100;w=60');
    expect(parseRateLimit(pro.headers.get("ratelimit"))).toEqual({ api: { r: 99, t: 60 } });
    service.updateRule("api", { algorithm: "fixed-window", limit: 5, windowMs: 10_000 });
    expect((await fetch(served.url)).headers.get("ratelimit-policy")).toBe('"api";q=5;w=10');
  });

  // A store whose backend is down and whose failure policy answered: exactly what RedisStore's
  // onError produces (the real Redis case is in redis-failure.test.ts).
  const failedStore = (policy: "deny" | "allow"): Store => ({
    synchronous: false,
    bind: () => ({
      check: async () => ({
        allowed: policy === "allow",
        limit: 10,
        remaining: policy === "allow" ? 10 : 0,
        retryAfterMs: 0,
        resetMs: 0,
        delayMs: 0,
        failure: { policy, error: new Error("connection refused") },
      }),
      reset: async () => {},
      release: () => {},
    }),
  });

  test("store failure under deny: 503 with its own problem body and Retry-After", async () => {
    served = await serveNode({
      spec: { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
      store: failedStore("deny"),
    });
    const res = await fetch(served.url);
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.headers.get("retry-after")).toBe("1"); // a store outage says when to come back
    expect(res.headers.get("ratelimit")).toBeNull();
    const body = await res.json();
    expect(body).toMatchObject({
      status: 503,
      title: "Store unavailable",
      type: "urn:sluice:problem:store-unavailable",
    });
    expect(body.type).not.toMatch(/quota-exceeded/);
  });

  test("store failure under allow: passes without remaining-count headers", async () => {
    served = await serveNode({
      spec: { algorithm: "fixed-window", limit: 10, windowMs: 1000 },
      store: failedStore("allow"),
    });
    const res = await fetch(served.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit")).toBeNull();
    expect(res.headers.get("ratelimit-policy")).toBe('"default";q=10;w=1');
  });

  test("misconfiguration is reported once: trustProxy with no forwarding header", async () => {
    const warnings: Array<{ code?: string | undefined; message: string }> = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push({ code: w.code, message: w.message });
    process.on("warning", onWarning);
    try {
      served = await serveNode({ spec: { algorithm: "fixed-window", limit: 10, windowMs: 1000 }, trustProxy: 1 });
      await fetch(served.url);
      await fetch(served.url);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    const ours = warnings.filter((w) => w.code === "SLUICE_TRUST_PROXY_NO_HEADER");
    expect(ours).toHaveLength(1);
    expect(ours[0]?.message).toMatch(/every client behind that proxy shares one bucket/);
  });

  test("bad options fail at construction, naming the option and the value", () => {
    const spec = { algorithm: "fixed-window", limit: 1, windowMs: 1000 } as const;
    expect(() => rateLimit({ spec, trustProxy: true as never })).toThrow(/trustProxy.*got true/);
    expect(() => rateLimit({ spec, headers: "draft-9" as never })).toThrow(/`headers` must be .*got "draft-9"/);
    expect(() => rateLimit({ spec, ipv6Subnet: 200 })).toThrow(/ipv6Subnet.*got 200/);
    expect(() => rateLimit({})).toThrow(/`spec`/);
    expect(() => rateLimit({ spec, key: "ip" as never })).toThrow(/`key` must be a function \(got "ip"\)/);
    expect(() => rateLimit({ spec, tier: () => "pro" })).toThrow(/tier/);
    expect(() => rateLimit({ spec: { algorithm: "fixed-window", limit: 0, windowMs: 1 } })).toThrow(/limit/);
    const named = rateLimit({ spec });
    expect(named.name).toBe("sluiceRateLimit");
  });

  test("a long custom key is hashed, not stored raw", async () => {
    const store = new MemoryStore();
    const keys: string[] = [];
    served = await serveNode({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      store,
      key: (req: IncomingMessage) => String(req.headers["x-token"]),
      onDecision: (_r: unknown, _d: Decision, _n: string, info: { key: string }) => keys.push(info.key),
    });
    await fetch(served.url, { headers: { "x-token": "t".repeat(5000) } });
    expect(keys[0]).toMatch(/^sha256:/);
    expect((keys[0] as string).length).toBeLessThan(60);
  });
  test('count "failed": one extra store call (the refund) per counted-out request, none for the others', async () => {
    // A store that records the operations it is asked for, around a real MemoryStore.
    const inner = new MemoryStore();
    const ops: string[] = [];
    const recording: Store = {
      synchronous: inner.synchronous,
      bind: (rule) => {
        const bound = inner.bind(rule);
        return {
          check: (key, cost, now, op) => {
            ops.push(op);
            return bound.check(key, cost, now, op);
          },
          reset: (key) => bound.reset(key),
          release: () => bound.release(),
        };
      },
    };
    served = await serveNode({
      spec: { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
      store: recording,
      clock: new ManualClock(0),
      count: "failed",
    });
    for (const path of ["/status/200", "/status/500", "/status/201", "/status/404"]) {
      await (await fetch(`${served.url}${path}`)).arrayBuffer();
    }
    expect(ops).toEqual(["check", "refund", "check", "check", "refund", "check"]);
  });
});

describe("node http: a client that leaves during an async hook", () => {
  test("is still matched by its address: a deny-listed client never reaches the handler", async () => {
    let handled = 0;
    const limit = rateLimit({
      spec: { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
      denyList: ["127.0.0.0/8", "::1/128"],
      skip: async () => {
        await new Promise((r) => setTimeout(r, 50)); // the client is gone by the time this answers
        return false;
      },
    });
    // Every request's limit() settling is counted: the test waits for all five, not for a sleep.
    let settled = 0;
    let allSettled: () => void = () => {};
    const done = new Promise<void>((r) => {
      allSettled = r;
    });
    const server = http.createServer(async (req, res) => {
      try {
        if (await limit(req, res)) {
          handled++;
          res.end("ok");
        }
      } finally {
        if (++settled === 5) allSettled();
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    // Each client leaves once the server has its request (while the skip hook still waits): a
    // socket destroyed before the request is parsed would never reach the handler at all.
    let arrivedCount = 0;
    let allArrived: () => void = () => {};
    const arrived = new Promise<void>((r) => {
      allArrived = r;
    });
    server.on("request", () => {
      if (++arrivedCount === 5) allArrived();
    });
    const { connect } = await import("node:net");
    const sockets = [];
    for (let i = 0; i < 5; i++) {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      socket.write("POST /transfer HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
      sockets.push(socket);
    }
    await arrived;
    for (const socket of sockets) socket.destroy();
    await done;
    expect(handled).toBe(0);
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe("node http: count when the client left before the middleware answered", () => {
  test.each([
    [undefined, 200], // countOn "response": the client left, so it did not succeed: refunded
    ["handler", 429], // countOn "handler": the handler ran and answered 200: counted
  ])('count "succeeded", countOn %s: the next request is answered %i', async (countOn, next) => {
    const limit = rateLimit({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      clock: new ManualClock(0),
      count: "succeeded",
      ...(countOn === undefined ? {} : { countOn: countOn as "handler" }),
      // Answers only once the client has gone: the response is closed before the middleware looks.
      skip: async (req) => {
        if (req.url === "/send-sms" && !req.socket.destroyed) await new Promise((r) => req.socket.once("close", r));
        return false;
      },
    });
    let handled: () => void = () => {};
    const done = new Promise<void>((r) => {
      handled = r;
    });
    const server = http.createServer(async (req, res) => {
      if (await limit(req, res)) {
        res.statusCode = 200;
        res.end("sent"); // the work ran, though nobody reads the answer
      }
      if (req.url === "/send-sms") setImmediate(handled);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    const { connect } = await import("node:net");
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => undefined);
    socket.write("POST /send-sms HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", () => socket.destroy());
    await done;
    const after = await fetch(`http://127.0.0.1:${port}/next`);
    await after.arrayBuffer();
    expect(after.status).toBe(next);
    await new Promise<void>((r) => server.close(() => r()));
  });
});

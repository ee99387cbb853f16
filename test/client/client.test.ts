// sluice/client against a real `sluice serve` (started in-process on port 0), a closed port
// and a server that accepts connections but never answers.
import { connect, createServer, type Socket } from "node:net";
import { createLimiter, ManualClock, StoreError, UnknownRuleError } from "sluice";
import { createClient, type SluiceClient } from "sluice/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";
import { type BlackHole, blackHole, freePort } from "../support/net.ts";

const tmp = tempDir();
const RULES = `rules:
  hundred: { algorithm: fixed-window, limit: 50, windowMs: 1h }
  pings: { type: sliding, limit: 2, windowMs: 1h }
  login:
    - { algorithm: sliding-log, limit: 5, windowMs: 1h }
    - { algorithm: fixed-window, limit: 20, windowMs: 1h }
  search:
    spec: { algorithm: gcra, limit: 60, periodMs: 1h, burst: 10 }
    tiers:
      pro: { algorithm: gcra, limit: 600, periodMs: 1h, burst: 100 }
  wide: { algorithm: fixed-window, limit: 1000000, windowMs: 1h }
`;

async function serve(
  extra: { token?: string; maxBatch?: number } = {},
): Promise<RunningServer & { requests(): number }> {
  const config = tmp.file("rules.yaml", RULES);
  const running = await startServer({
    config,
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 1024 * 1024,
    maxBatch: extra.maxBatch ?? 1000,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
    ...(extra.token === undefined ? {} : { token: extra.token }),
  });
  let requests = 0;
  running.server.on("request", () => requests++);
  return Object.assign(running, { requests: () => requests });
}

let main: Awaited<ReturnType<typeof serve>>;
let client: SluiceClient;
const clients: SluiceClient[] = [];
const open = (options: Parameters<typeof createClient>[0]) => {
  const c = createClient(options);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  main = await serve();
  client = open({ url: main.url });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await main?.close();
  tmp.cleanup();
});

describe("createClient against a real sluice serve", () => {
  it("checks: Decisions as the service makes them, Infinity restored, composites with parts, tiers", async () => {
    expect(await client.check("pings", "a")).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: expect.any(Number),
      delayMs: 0,
    });
    await client.check("pings", "a");
    const denied = await client.check("pings", "a");
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBeGreaterThan(0);
    const never = await client.check("login", "big", { cost: 6 });
    expect(never.allowed).toBe(false);
    expect(never.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    expect(never.parts).toHaveLength(2);
    expect((await client.check("search", "t", { tier: "pro" })).limit).toBe(100);
    expect((await client.check("search", "t")).limit).toBe(10);
  });

  it("100 checks issued in one tick travel as ONE request, answered in order", async () => {
    const before = main.requests();
    const decisions = await Promise.all(Array.from({ length: 100 }, () => client.check("hundred", "burst")));
    expect(main.requests() - before).toBe(1);
    expect(decisions.map((d) => d.allowed)).toEqual([...Array(50).fill(true), ...Array(50).fill(false)]);
    expect(decisions.map((d) => d.remaining).slice(0, 3)).toEqual([49, 48, 47]);
  });

  it("splits a tick's checks at maxBatch", async () => {
    const small = open({ url: main.url, maxBatch: 25 });
    const before = main.requests();
    const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => small.check("wide", `k${i}`)));
    expect(main.requests() - before).toBe(4);
    expect(decisions.every((d) => d.allowed)).toBe(true);
  });

  it("learns a smaller --max-batch from the service's 413 and splits, deciding each check once", async () => {
    const strict = await serve({ maxBatch: 10 });
    try {
      const c = open({ url: strict.url });
      const first = await Promise.all(Array.from({ length: 30 }, () => c.check("wide", "same")));
      expect(first.map((d) => d.remaining)).toEqual(Array.from({ length: 30 }, (_, i) => 999_999 - i));
      const before = strict.requests();
      await Promise.all(Array.from({ length: 30 }, (_, i) => c.check("wide", `n${i}`)));
      expect(strict.requests() - before).toBe(3); // learnt: no more 413s
    } finally {
      await strict.close();
    }
  });

  it("refuses an unknown rule with UnknownRuleError and an unknown tier with ArgumentError; the rest of the batch is answered", async () => {
    const [ok, unknown, badTier, ok2] = await Promise.allSettled([
      client.check("wide", "x"),
      client.check("nope", "x"),
      client.check("search", "x", { tier: "gold" }),
      client.check("wide", "y"),
    ]);
    expect(ok).toMatchObject({ status: "fulfilled", value: { allowed: true } });
    expect(ok2).toMatchObject({ status: "fulfilled", value: { allowed: true } });
    expect(unknown.status === "rejected" && unknown.reason).toBeInstanceOf(UnknownRuleError);
    expect(unknown).toMatchObject({ reason: { code: "ERR_UNKNOWN_RULE", rule: "nope" } });
    expect(badTier).toMatchObject({ status: "rejected", reason: { code: "ERR_INVALID_ARGUMENT" } });
    expect(badTier.status === "rejected" && String(badTier.reason.message)).toMatch(/no tier "gold"/);
  });

  it("sends the token; a missing or wrong one is a StoreError with the service's detail, not a policy answer", async () => {
    const guarded = await serve({ token: "s3cret" });
    try {
      expect((await open({ url: guarded.url, token: "s3cret" }).check("wide", "t")).allowed).toBe(true);
      const anonymous = open({ url: guarded.url, onError: "allow" });
      await expect(anonymous.check("wide", "t")).rejects.toMatchObject({
        name: "StoreError",
        code: "ERR_STORE",
        message: expect.stringMatching(/401 unauthorized.*Bearer/),
      });
      await expect(open({ url: guarded.url, token: "wrong" }).check("wide", "t")).rejects.toThrow(/not valid/);
    } finally {
      await guarded.close();
    }
  });

  it("checks arguments and options before sending anything", async () => {
    const before = main.requests();
    await expect(client.check("", "k")).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    await expect(client.check("wide", 5 as unknown as string)).rejects.toThrow(/key must be a string/);
    await expect(client.check("wide", "k", { cost: 0 })).rejects.toThrow(/cost must be a positive integer \(got 0\)/);
    await expect(client.check("wide", "k", { costs: 2 } as never)).rejects.toThrow(/unknown option `costs`/);
    expect(main.requests()).toBe(before);
    expect(() => createClient({ url: main.url, timeout: 5 } as never)).toThrow(/unknown createClient option `timeout`/);
    expect(() => createClient({ url: "ftp://x" })).toThrow(/http: or https:/);
    expect(() => createClient({ url: "not a url" })).toThrow(/`url` must be/);
    expect(() => createClient({ url: main.url, timeoutMs: -1 })).toThrow(
      /`timeoutMs` must be a positive integer \(got -1\)/,
    );
    expect(() => createClient({ url: main.url, onError: "ignore" as never })).toThrow(
      /`onError` must be .* \(got "ignore"\)/,
    );
    expect(() => createClient({ url: main.url, breaker: { failure: 3 } as never })).toThrow(
      /unknown breaker option `failure`/,
    );
  });

  it("reuses kept-alive sockets across calls", async () => {
    const sockets = new Set<unknown>();
    const count = (req: { socket: unknown }) => sockets.add(req.socket);
    main.server.on("request", count);
    try {
      for (let i = 0; i < 5; i++) await client.check("wide", `seq${i}`);
    } finally {
      main.server.off("request", count);
    }
    expect(sockets.size).toBe(1);
  });

  it("close() answers calls in flight, then later calls reject", async () => {
    const c = createClient({ url: main.url });
    const pending = c.check("wide", "closing");
    await c.close();
    expect((await pending).allowed).toBe(true);
    await expect(c.check("wide", "after")).rejects.toThrow(/closed/);
  });
});

describe("peek and reset (POST /v1/peek, /v1/reset)", () => {
  it("peek changes nothing; reset forgets the key", async () => {
    await client.check("pings", "pr");
    // peek says what a check would: allowed, leaving 0; twice, since it takes nothing.
    const [p1, p2] = await Promise.all([client.peek("pings", "pr"), client.peek("pings", "pr")]);
    expect([p1, p2].map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 0],
      [true, 0],
    ]);
    expect((await client.check("pings", "pr")).allowed).toBe(true);
    expect((await client.check("pings", "pr")).allowed).toBe(false);
    await client.reset("pings", "pr");
    expect((await client.check("pings", "pr")).remaining).toBe(1);
  });

  it("check; reset; check issued in one tick reach the service in that order", async () => {
    const first = client.check("pings", "order");
    const reset = client.reset("pings", "order");
    const last = client.check("pings", "order");
    await Promise.all([first, reset, last]);
    // The reset forgot the first check; the last one counted: one of two used.
    expect((await client.peek("pings", "order")).remaining).toBe(0);
    expect((await last).remaining).toBe(1);
  });
});

describe("when the service is down: RedisStore's failure policies", () => {
  let deadUrl: string;
  let silent: BlackHole;
  let silentUrl: string;

  beforeAll(async () => {
    // A port that was just free: nothing listens there, connections are refused.
    deadUrl = `http://127.0.0.1:${await freePort()}`;
    // Accepts connections and reads requests, but never answers.
    silent = await blackHole();
    silentUrl = `http://127.0.0.1:${silent.port}`;
  });
  afterAll(() => silent.close());

  it('"deny" (default): a refused connection is answered at once (ERR_STORE, not a timeout), failure attached', async () => {
    const c = open({ url: deadUrl, timeoutMs: 60_000 });
    const d = await c.check("api", "k");
    expect(d).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1000, failure: { policy: "deny" } });
    expect(d.failure?.error).toBeInstanceOf(StoreError);
    expect(d.failure?.error).toMatchObject({ code: "ERR_STORE", cause: { code: "ECONNREFUSED" } });
  });

  it('"allow" lets the call through, marked', async () => {
    const d = await open({ url: deadUrl, onError: "allow" }).check("api", "k", { cost: 2 });
    expect(d).toMatchObject({ allowed: true, failure: { policy: "allow", error: { code: "ERR_STORE" } } });
  });

  it('"throw" rejects with the StoreError', async () => {
    await expect(open({ url: deadUrl, onError: "throw" }).check("api", "k")).rejects.toMatchObject({
      name: "StoreError",
      code: "ERR_STORE",
    });
  });

  it("a fallback Limiter decides instead (per rule with a factory)", async () => {
    const clock = new ManualClock();
    const made: string[] = [];
    const c = open({
      url: deadUrl,
      onError: (rule) => {
        made.push(rule);
        return createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 1000 }, { clock });
      },
    });
    const ds = await Promise.all([c.check("api", "k"), c.check("api", "k"), c.check("api", "k"), c.check("b", "k")]);
    expect(ds.map((d) => d.allowed)).toEqual([true, true, false, true]);
    expect(ds.every((d) => d.failure?.policy === "fallback")).toBe(true);
    expect(made).toEqual(["api", "b"]);
    const shared = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { clock });
    const d = await open({ url: deadUrl, onError: shared }).peek("api", "z");
    expect(d).toMatchObject({ allowed: true, failure: { policy: "fallback" } });
  });

  it("a server that accepts but never answers: ERR_STORE_TIMEOUT after timeoutMs, by the policy", async () => {
    const c = open({ url: silentUrl, timeoutMs: 150 });
    const ds = await Promise.all([c.check("api", "k"), c.check("api", "j")]);
    for (const d of ds) {
      expect(d).toMatchObject({ allowed: false, failure: { policy: "deny", error: { code: "ERR_STORE_TIMEOUT" } } });
    }
    await expect(open({ url: silentUrl, timeoutMs: 100, onError: "throw" }).check("api", "k")).rejects.toMatchObject({
      code: "ERR_STORE_TIMEOUT",
    });
  });

  it("reset rejects with a StoreError when the service cannot be reached", async () => {
    await expect(open({ url: deadUrl }).reset("api", "k")).rejects.toMatchObject({ code: "ERR_STORE" });
  });

  it("the circuit breaker opens after consecutive failures and answers without connecting", async () => {
    const c = open({ url: deadUrl, breaker: { failures: 2, coolDownMs: 60_000 } });
    await c.check("api", "k");
    await c.check("api", "k");
    expect(c.circuitOpen).toBe(true);
    const d = await c.check("api", "k");
    expect(d.failure?.error.message).toMatch(/circuit breaker is open/);
  });

  it("the open circuit half-opens after coolDownMs even under steady traffic, and closes once the service answers", async () => {
    // A proxy in front of the real service: while `down` it drops every connection.
    let down = true;
    const sockets = new Set<Socket>();
    const proxy = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
      if (down) {
        socket.destroy();
        return;
      }
      const upstream = connect(Number(new URL(main.url).port), "127.0.0.1");
      upstream.on("error", () => socket.destroy());
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      const coolDownMs = 100;
      const c = open({
        url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
        breaker: { failures: 1, coolDownMs },
      });
      expect((await c.check("hundred", "breaker-steady")).failure).toBeDefined();
      expect(c.circuitOpen).toBe(true);
      down = false;
      // Calls every coolDownMs / 2 while open: each is answered by the policy, and none may push
      // the probe back (else a busy client never learns the service is back).
      let d = await c.check("hundred", "breaker-steady");
      for (let i = 0; i < 60 && d.failure !== undefined; i++) {
        await new Promise((r) => setTimeout(r, coolDownMs / 2));
        d = await c.check("hundred", "breaker-steady");
      }
      expect(d.failure).toBeUndefined();
      expect(c.circuitOpen).toBe(false);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it("a 503 from the service (its Redis down, --on-store-error throw) goes to the client's policy", async () => {
    const s = await startServer({
      config: tmp.file("rules-redis.yaml", RULES),
      port: 0,
      host: "127.0.0.1",
      maxBodyBytes: 65536,
      maxBatch: 1000,
      watch: false,
      shutdownTimeoutMs: 1000,
      log: () => undefined,
      redis: deadUrl.replace("http:", "redis:"),
      timeoutMs: 100,
      onError: "throw",
    });
    try {
      // The client's own timeout is generous: at the default 1 s, a loaded machine can make the
      // in-process service's 503 late, and the answer would be the client's ERR_STORE_TIMEOUT
      // instead of the 503 this test is about.
      const d = await open({ url: s.url, timeoutMs: 60_000 }).check("pings", "k");
      expect(d).toMatchObject({ allowed: false, failure: { policy: "deny", error: { code: "ERR_STORE" } } });
      expect(d.failure?.error.message).toMatch(/503 store-unavailable/);
    } finally {
      await s.close();
    }
  }, 30_000);

  it("a 500 from the service (an internal error) goes to the client's policy too (deny and allow)", async () => {
    // A real HTTP server answering every call with the service's 500 problem.
    const { createServer: createHttpServer } = await import("node:http");
    const failing = createHttpServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(500, { "content-type": "application/problem+json" });
        res.end(
          JSON.stringify({
            type: "urn:sluice:problem:internal",
            title: "Internal error",
            status: 500,
            detail: "the service failed to answer this request; see its log",
          }),
        );
      });
    });
    await new Promise<void>((r) => failing.listen(0, "127.0.0.1", () => r()));
    try {
      const { port } = failing.address() as { port: number };
      const c = open({ url: `http://127.0.0.1:${port}`, timeoutMs: 60_000, onError: "deny" });
      const d = await c.check("pings", "k");
      expect(d).toMatchObject({ allowed: false, failure: { policy: "deny", error: { code: "ERR_STORE" } } });
      expect(d.failure?.error.message).toMatch(/500/);
      const allowing = open({ url: `http://127.0.0.1:${port}`, timeoutMs: 60_000, onError: "allow" });
      expect(await allowing.check("pings", "k")).toMatchObject({ allowed: true, failure: { policy: "allow" } });
    } finally {
      await new Promise<void>((r) => failing.close(() => r()));
    }
  });

  it("the deny answer reports the rule's limit the service last gave", async () => {
    // Point a client at a live service, learn, then lose it.
    const s = await serve();
    const c = open({ url: s.url, timeoutMs: 60_000 });
    expect((await c.check("pings", "k")).limit).toBe(2);
    await s.close();
    const d = await c.check("pings", "k");
    expect(d).toMatchObject({ allowed: false, limit: 2, failure: { policy: "deny" } });
  });
});

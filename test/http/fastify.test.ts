// sluice/fastify: a real Fastify 5 server over loopback, inject(), and plugin encapsulation.
import { get } from "node:http";
import { Readable } from "node:stream";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import { ManualClock } from "sluice";
import { rateLimit, rateLimitHook } from "sluice/fastify";
import { afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { conformance, hangSignals, type Options, parseRateLimit, routeOf, type Served } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

function app(options: Options | Options[]) {
  const fastify = Fastify();
  for (const { customLimited, ...rest } of Array.isArray(options) ? options : [options]) {
    if (customLimited) {
      rest.onLimited = (_req: FastifyRequest, reply: FastifyReply) => reply.type("text/plain").send("slow down");
    }
    fastify.register(rateLimit, rest as never);
  }
  const hang = hangSignals();
  fastify.all("/*", async (request, reply) => {
    const route = routeOf(request.url);
    if (route.kind === "throw") throw new Error("handler failed");
    if (route.kind === "hang") {
      hang.enter();
      const late = route.late;
      return new Promise((resolve) => {
        reply.raw.once("close", () => {
          if (late !== undefined) {
            reply.code(late);
            resolve("late");
          }
          hang.leave();
        });
      });
    }
    if (route.kind === "decision") return JSON.stringify(request.rateLimit ?? null);
    if (route.kind === "stream") return reply.send(Readable.from(["o", "k"]));
    if (route.kind === "status") reply.code(route.code);
    return "ok";
  });
  return Object.assign(fastify, { hang: hang.served });
}

const fastifyAdapter = {
  serve: async (options: Options | Options[]) => {
    const fastify = app(options);
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    const served = await listening(fastify.server, "127.0.0.1", () => fastify.close());
    return { ...served, hang: fastify.hang, handles: fastify.rateLimit };
  },
  header: (request: unknown, name: string) => (request as FastifyRequest).headers[name] as string | undefined,
  path: (request: unknown) => (request as FastifyRequest).url,
};
conformance("fastify", fastifyAdapter);
features("fastify", fastifyAdapter);
leases("fastify", fastifyAdapter);

describe("fastify", () => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test("inject(): headers and 429 problem body", async () => {
    const fastify = app({ spec: { algorithm: "gcra", limit: 2, periodMs: 10_000 }, clock: new ManualClock(0) });
    const first = await fastify.inject({ url: "/x" });
    expect(first.statusCode).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"default";q=2;w=10');
    expect(parseRateLimit(first.headers.ratelimit as string)).toEqual({ default: { r: 1, t: 5 } });
    await fastify.inject({ url: "/x" });
    const denied = await fastify.inject({ url: "/x" });
    expect(denied.statusCode).toBe(429);
    expect(denied.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(denied.headers["retry-after"]).toBe("5");
    expect(denied.json()).toMatchObject({ status: 429, "violated-policies": ["default"] });
    // inject() sets no forwarded header; remoteAddress is given: keyed apart.
    const other = await fastify.inject({ url: "/x", remoteAddress: "192.0.2.1" });
    expect(other.statusCode).toBe(200);
    await fastify.close();
  });

  test("a RateLimit-Policy set on the raw response before it is appended to, not replaced", async () => {
    // The adapter writes into Fastify's own headers object, and reads the raw response for what
    // was set there: a policy another hook wrote on reply.raw must still be found and extended.
    const fastify = Fastify();
    fastify.addHook("onRequest", (request, reply, done) => {
      if (request.url === "/raw") reply.raw.setHeader("RateLimit-Policy", '"other";q=5;w=60');
      else if (request.url === "/unrelated") reply.raw.setHeader("X-Unrelated", "1");
      done();
    });
    fastify.register(rateLimit, { spec: { algorithm: "fixed-window", limit: 4, windowMs: 60_000 } });
    fastify.get("/*", async () => "ok");
    const ours = '"default";q=4;w=60';
    for (const url of ["/a", "/raw", "/unrelated", "/raw"]) {
      const response = await fastify.inject({ url });
      expect(response.statusCode).toBe(200);
      expect(response.headers["ratelimit-policy"]).toBe(url === "/raw" ? `"other";q=5;w=60, ${ours}` : ours);
      if (url === "/unrelated") expect(response.headers["x-unrelated"]).toBe("1");
    }
    await fastify.close();
  });

  test("headers on the wire: the same names, values and order on every request, with or without a header set before", async () => {
    // The adapter writes the draft-11 pair into the reply's headers object directly once it has
    // seen where reply.header() puts it (after the first request): what a client gets must not change.
    const fastify = Fastify();
    fastify.addHook("onRequest", (request, reply, done) => {
      if (request.url === "/before") reply.header("X-Before", "1");
      done();
    });
    fastify.register(rateLimit, {
      spec: { algorithm: "fixed-window", limit: 4, windowMs: 60_000 },
      clock: new ManualClock(0),
    });
    fastify.get("/*", async () => "ok");
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    served = await listening(fastify.server, "127.0.0.1", () => fastify.close());
    const seen: string[][] = [];
    for (const path of ["/a", "/before", "/a", "/before", "/a"]) {
      const raw = await new Promise<string[]>((resolve, reject) => {
        get(new URL(path, served?.url), (response) => {
          response.resume();
          response.on("end", () => resolve(response.rawHeaders));
        }).on("error", reject);
      });
      const pairs: string[] = [];
      for (let i = 0; i < raw.length; i += 2) {
        const name = (raw[i] as string).toLowerCase();
        if (name !== "date" && name !== "connection" && name !== "keep-alive") pairs.push(`${name}: ${raw[i + 1]}`);
      }
      seen.push(pairs);
    }
    const policy = 'ratelimit-policy: "default";q=4;w=60';
    const ok = ["content-type: text/plain; charset=utf-8", "content-length: 2"];
    expect(seen).toEqual([
      [policy, 'ratelimit: "default";r=3;t=60', ...ok],
      ["x-before: 1", policy, 'ratelimit: "default";r=2;t=60', ...ok],
      [policy, 'ratelimit: "default";r=1;t=60', ...ok],
      ["x-before: 1", policy, 'ratelimit: "default";r=0;t=60', ...ok],
      [
        policy,
        'ratelimit: "default";r=0;t=60',
        "retry-after: 60",
        "cache-control: no-store",
        "content-type: application/problem+json; charset=utf-8",
        expect.stringMatching(/^content-length: \d+$/),
      ],
    ]);
  });

  test("registered in an encapsulated plugin, it limits only that plugin's routes", async () => {
    const fastify = Fastify();
    const spec = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 } as const;
    fastify.register(async (child) => {
      child.register(rateLimit, { spec, clock: new ManualClock() });
      child.get("/limited", async () => "ok");
    });
    fastify.get("/free", async () => "ok");
    expect((await fastify.inject({ url: "/limited" })).statusCode).toBe(200);
    expect((await fastify.inject({ url: "/limited" })).statusCode).toBe(429);
    for (let i = 0; i < 3; i++) {
      const free = await fastify.inject({ url: "/free" });
      expect(free.statusCode).toBe(200);
      expect(free.headers.ratelimit).toBeUndefined();
    }
    await fastify.close();
  });

  test("rateLimitHook limits one route; async hooks and errors go through Fastify", async () => {
    const fastify = Fastify();
    const hook = rateLimitHook({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      clock: new ManualClock(),
      key: async (req) => {
        if (req.headers["x-fail"]) throw new Error("key lookup failed");
        return "k";
      },
    });
    expect(hook.name).toBe("sluiceOnRequest");
    fastify.get("/one", { onRequest: hook }, async () => "ok");
    fastify.get("/other", async () => "ok");
    expect((await fastify.inject({ url: "/one" })).statusCode).toBe(200);
    expect((await fastify.inject({ url: "/one" })).statusCode).toBe(429);
    expect((await fastify.inject({ url: "/other" })).statusCode).toBe(200);
    const failed = await fastify.inject({ url: "/one", headers: { "x-fail": "1" } });
    expect(failed.statusCode).toBe(500);
    expect(failed.json().message).toBe("key lookup failed");
    await fastify.close();
  });

  test("route config.rateLimit: an override merged over the plugin's options, or false; own state per route", async () => {
    const fastify = Fastify();
    const clock = new ManualClock(1_800_000_000_000);
    const seen: string[] = [];
    fastify.register(rateLimit, {
      spec: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
      clock,
      onDecision: (request, _d, rule) => seen.push(`${request.url} ${rule}`),
    });
    const strict = { spec: { algorithm: "fixed-window", limit: 1, windowMs: 60_000 } } as const;
    fastify.get("/login", { config: { rateLimit: strict } }, async () => "ok");
    fastify.get("/reset", { config: { rateLimit: strict } }, async () => "ok");
    fastify.get("/health", { config: { rateLimit: false } }, async () => "ok");
    fastify.get("/other", async () => "ok");
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    served = await listening(fastify.server, "127.0.0.1", () => fastify.close());
    const { url } = served;
    const get = async (path: string) => (await fetch(`${url}${path}`)).status;
    expect([await get("/login"), await get("/login")]).toEqual([200, 429]);
    // Same override object on another route: still its own budget (named after the route).
    expect([await get("/reset"), await get("/reset")]).toEqual([200, 429]);
    const health = await fetch(`${url}/health`);
    expect([health.status, health.headers.get("ratelimit")]).toEqual([200, null]);
    expect([await get("/other"), await get("/other"), await get("/other"), await get("/other")]).toEqual([
      200, 200, 200, 429,
    ]);
    // The plugin's options (clock, onDecision) carry into the override; /health is never seen.
    expect(seen.filter((s) => s.startsWith("/health"))).toEqual([]);
    expect(seen.filter((s) => s.startsWith("/login"))).toHaveLength(2);
    // The instance's handles are the plugin's own limit.
    expect((await fastify.rateLimit.peek("127.0.0.1")).allowed).toBe(false);
    await fastify.rateLimit.reset("127.0.0.1");
    expect(await get("/other")).toBe(200);
    expect(await get("/login")).toBe(429);
  });

  test("a bad route config.rateLimit fails when the route is declared", async () => {
    const fastify = Fastify();
    fastify.register(rateLimit, { spec: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 } });
    fastify.register(async (child) => {
      child.get(
        "/x",
        { config: { rateLimit: { spec: { algorithm: "fixed-window", limit: 0, windowMs: 1 } } } },
        async () => "ok",
      );
    });
    await expect(fastify.ready()).rejects.toThrow(/limit/);
    const other = Fastify();
    other.register(rateLimit, { spec: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 } });
    other.register(async (child) => {
      child.get("/y", { config: { rateLimit: "strict" as never } }, async () => "ok");
    });
    await expect(other.ready()).rejects.toThrow(/config.rateLimit.*options object or false.*"strict"/);
  });

  test("the plugin is named and marked skip-override", () => {
    expect(rateLimit.name).toBe("sluiceFastify");
    expect((rateLimit as unknown as Record<symbol, unknown>)[Symbol.for("skip-override")]).toBe(true);
  });
});

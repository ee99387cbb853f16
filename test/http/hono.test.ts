import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ManualClock } from "sluice";
import { type RateLimitHandles, rateLimit } from "sluice/hono";
import { describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { conformance, hangSignals, type Options, parseRateLimit, routeOf, twoChunks } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

function app(options: Options | Options[]) {
  const hono = new Hono();
  let handles: RateLimitHandles | undefined;
  for (const { customLimited, ...rest } of Array.isArray(options) ? options : [options]) {
    if (customLimited) rest.onLimited = (c: Context) => c.text("slow down", 429);
    const limit = rateLimit(rest as never);
    handles ??= limit;
    hono.use(limit);
  }
  const hang = hangSignals();
  hono.all("*", async (c) => {
    const route = routeOf(c.req.path);
    if (route.kind === "throw") throw new Error("handler failed");
    if (route.kind === "hang") {
      const signal = c.req.raw.signal;
      hang.enter();
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      hang.leave();
      return c.text("late", (route.late ?? 200) as ContentfulStatusCode);
    }
    if (route.kind === "decision") return c.json(c.get("rateLimit") ?? null);
    if (route.kind === "stream") return c.body(twoChunks());
    return c.text("ok", route.kind === "status" ? (route.code as ContentfulStatusCode) : 200);
  });
  return Object.assign(hono, { hang: hang.served, handles });
}

const honoAdapter = {
  serve: async (options: Options | Options[]) => {
    const hono = app(options);
    const server = serve({ fetch: hono.fetch, port: 0, hostname: "127.0.0.1" });
    return { ...(await listening(server as never)), hang: hono.hang, handles: hono.handles };
  },
  header: (request: unknown, name: string) => (request as Context).req.header(name),
  path: (request: unknown) => (request as Context).req.path,
};
conformance("hono (node-server)", honoAdapter);
features("hono (node-server)", honoAdapter);
leases("hono (node-server)", honoAdapter);

describe("hono app.request()", () => {
  test("headers, 429 problem body; the address comes from the `address` option", async () => {
    const hono = app({
      spec: { algorithm: "token-bucket", capacity: 2, refillPerSecond: 0.5 },
      clock: new ManualClock(0),
      address: (c: Context) => c.req.header("x-test-peer"),
    });
    const as = (peer: string) => hono.request("/x", { headers: { "x-test-peer": peer } });
    const first = await as("192.0.2.1");
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"default";q=2;w=4');
    expect(parseRateLimit(first.headers.get("ratelimit"))).toEqual({ default: { r: 1, t: 2 } });
    await as("192.0.2.1");
    const denied = await as("192.0.2.1");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toBe("2");
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(await denied.json()).toMatchObject({ status: 429, "violated-policies": ["default"] });
    expect((await as("::ffff:192.0.2.2")).status).toBe(200);
    expect((await as("192.0.2.2")).status).toBe(200);
    expect((await as("192.0.2.2")).status).toBe(429); // the mapped and plain forms are one client
  });

  test("headers are added to a raw Response returned by the handler (immutable headers too)", async () => {
    const hono = new Hono();
    hono.use(rateLimit({ spec: { algorithm: "fixed-window", limit: 3, windowMs: 1000 }, key: () => "k" }));
    hono.get("/raw", () => new Response("raw"));
    hono.get("/fetched", async () => Response.redirect("http://example.invalid/", 302));
    const raw = await hono.request("/raw");
    expect([await raw.text(), raw.headers.get("ratelimit")]).toEqual(["raw", '"default";r=2;t=1']);
    const fetched = await hono.request("/fetched");
    expect(fetched.status).toBe(302);
    expect(fetched.headers.get("ratelimit")).toBe('"default";r=1;t=1');
  });

  test("the middleware is a named function", () => {
    expect(rateLimit({ spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 } }).name).toBe("sluiceRateLimit");
  });
});

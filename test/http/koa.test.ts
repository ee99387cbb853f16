import { Readable } from "node:stream";
import Koa, { type Context } from "koa";
import { type Decision, ManualClock } from "sluice";
import { type RateLimitHandles, rateLimit } from "sluice/koa";
import { RedisStore } from "sluice/redis";
import { afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { deadIoredis } from "../support/redis-server.ts";
import { conformance, hangSignals, type Options, routeOf, type Served } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

async function serveKoa(
  options: Options | Options[],
  handler?: Koa.Middleware,
  setup?: (app: Koa) => void,
): Promise<Served> {
  const app = new Koa();
  app.silent = true; // errors are asserted on, not logged
  setup?.(app);
  let handles: RateLimitHandles | undefined;
  for (const { customLimited, ...rest } of Array.isArray(options) ? options : [options]) {
    if (customLimited) {
      rest.onLimited = (ctx: Context) => {
        ctx.body = "slow down";
      };
    }
    const limit = rateLimit(rest as never);
    handles ??= limit;
    app.use(limit);
  }
  const hang = hangSignals();
  app.use(
    handler ??
      (async (ctx) => {
        const route = routeOf(ctx.url);
        if (route.kind === "throw") throw new Error("handler failed");
        if (route.kind === "hang") {
          hang.enter();
          await new Promise((resolve) => ctx.res.once("close", resolve));
          hang.leave();
          if (route.late === undefined) await new Promise(() => undefined); // never answers
          ctx.status = route.late ?? 200;
          ctx.body = "late";
          return;
        }
        if (route.kind === "decision") {
          ctx.body = ctx.state.rateLimit ?? null;
          return;
        }
        if (route.kind === "stream") {
          ctx.body = Readable.from(
            (async function* () {
              yield "o";
              await new Promise((r) => setImmediate(r));
              yield "k";
            })(),
          );
          return;
        }
        ctx.status = route.kind === "status" ? route.code : 200;
        ctx.body = "ok";
      }),
  );
  return { ...(await listening(app.listen(0, "127.0.0.1"))), hang: hang.served, handles };
}

const koaAdapter = {
  serve: (options: Options | Options[]) => serveKoa(options),
  header: (ctx: unknown, name: string) => (ctx as Context).get(name) || undefined,
  path: (ctx: unknown) => (ctx as Context).path,
};
conformance("koa", koaAdapter);
features("koa", koaAdapter);
leases("koa", koaAdapter);

describe("koa", () => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test("the middleware is a named function", () => {
    expect(rateLimit({ spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 } }).name).toBe("sluiceRateLimit");
  });

  test("the decision is on ctx.state.rateLimit for the handler; absent when skipped", async () => {
    served = await serveKoa(
      {
        spec: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
        clock: new ManualClock(0),
        skip: (ctx: Context) => ctx.path === "/free",
      },
      (ctx) => {
        const decision: Decision | undefined = ctx.state.rateLimit;
        ctx.body = decision === undefined ? "none" : `${decision.allowed} ${decision.remaining}`;
      },
    );
    expect(await (await fetch(`${served.url}/a`)).text()).toBe("true 2");
    expect(await (await fetch(`${served.url}/a`)).text()).toBe("true 1");
    expect(await (await fetch(`${served.url}/free`)).text()).toBe("none");
  });

  test("errors from hooks (sync and async) reach Koa's error handling as 500s", async () => {
    const errors: string[] = [];
    served = await serveKoa(
      {
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        clock: new ManualClock(),
        cost: (ctx: Context) => {
          if (ctx.path === "/sync") throw new Error("boom");
          return ctx.path === "/bad" ? 1.5 : 1;
        },
        key: async (ctx: Context) => {
          if (ctx.path === "/async") throw new Error("async boom");
          return "k";
        },
      },
      undefined,
      (app) => app.on("error", (error: Error) => errors.push(error.message)),
    );
    for (const path of ["/sync", "/async", "/bad"]) expect((await fetch(`${served.url}${path}`)).status).toBe(500);
    expect((await fetch(`${served.url}/fine`)).status).toBe(200);
    expect(errors).toEqual([
      "boom",
      "async boom",
      expect.stringMatching(/cost must be a positive integer \(got 1.5\)/),
    ]);
  });

  test("Koa's `app.proxy` does not make forwarded addresses trusted", async () => {
    const keys: string[] = [];
    const app = new Koa({ proxy: true });
    app.use(
      rateLimit({
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        onDecision: (_ctx, _d, _rule, info) => keys.push(info.key),
      }),
    );
    app.use((ctx) => {
      ctx.body = ctx.ip;
    });
    served = await listening(app.listen(0, "127.0.0.1"));
    const res = await fetch(served.url, { headers: { "x-forwarded-for": "9.9.9.9" } });
    expect(await res.text()).toBe("9.9.9.9"); // Koa trusts it…
    expect(keys).toEqual(["127.0.0.1"]); // …sluice does not
  });

  test("a dead Redis under onError deny answers 503 problem JSON, not 429 and not a pass", async () => {
    const client = deadIoredis();
    try {
      served = await serveKoa({
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        store: new RedisStore({ client, onError: "deny" }),
      });
      const res = await fetch(served.url);
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        status: 503,
        title: "Store unavailable",
        type: "urn:sluice:problem:store-unavailable",
      });
    } finally {
      client.disconnect();
    }
  });
});

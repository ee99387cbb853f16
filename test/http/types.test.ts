// The decision on the request is typed on every adapter (module augmentation / Hono variables).
import type { IncomingMessage } from "node:http";
import type { Request as ExpressRequest } from "express";
import type { FastifyRequest } from "fastify";
import { Hono } from "hono";
import type { Decision } from "sluice";
import { rateLimit as honoRateLimit, type RateLimitVariables } from "sluice/hono";
import type { RateLimitOptions } from "sluice/http";
import { expectTypeOf, test } from "vitest";
import type { ENGINE_OPTION_KEYS } from "../../src/http/options.ts";

test("req.rateLimit (Node http, Express), request.rateLimit (Fastify), c.get('rateLimit') (Hono)", () => {
  expectTypeOf<IncomingMessage["rateLimit"]>().toEqualTypeOf<Decision | undefined>();
  expectTypeOf<ExpressRequest["rateLimit"]>().toEqualTypeOf<Decision | undefined>();
  expectTypeOf<FastifyRequest["rateLimit"]>().toEqualTypeOf<Decision | undefined>();
  expectTypeOf<RateLimitVariables["rateLimit"]>().toEqualTypeOf<Decision | undefined>();
  const app = new Hono<{ Variables: RateLimitVariables }>();
  app.use(honoRateLimit({ spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 } }));
  app.get("/", (c) => {
    expectTypeOf(c.get("rateLimit")).toEqualTypeOf<Decision | undefined>();
    return c.text("ok");
  });
});

test("the engine's list of known options covers every option (so none is refused as unknown)", () => {
  expectTypeOf<Exclude<keyof RateLimitOptions<unknown>, (typeof ENGINE_OPTION_KEYS)[number]>>().toBeNever();
});

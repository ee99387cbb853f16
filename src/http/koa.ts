/**
 * `sluice/koa`: Koa (2 and 3) middleware. The client address is the socket's, read through
 * sluice's own `trustProxy` (not Koa's `app.proxy`), so the two cannot silently disagree.
 * The decision is left on `ctx.state.rateLimit` for later middleware and handlers.
 *
 * @example app.use(rateLimit({ spec: { algorithm: "sliding-window", limit: 100, windowMs: 60_000 } }));
 */
import type { Context, Middleware, Next } from "koa";
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise } from "./engine.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import { nodeReader, releaseOnResponseEnd, responseHeader, settleOnEnd } from "./node.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";
import { tighter } from "./stack.ts";

declare module "koa" {
  /** What sluice adds to `ctx.state`. */
  interface DefaultState {
    /** The decision of the last sluice middleware that counted this request (absent when skipped). */
    rateLimit?: Decision;
  }
}

/** Options of the Koa middleware. */
export interface KoaRateLimitOptions extends RateLimitOptions<Context> {
  /** Answers a limited request: status 429 and the rate-limit headers are set; set `ctx.body`. */
  onLimited?: (ctx: Context, decision: Decision) => MaybePromise<void>;
}

/** Koa middleware limiting each client; errors from hooks or the store propagate to Koa. */
export function rateLimit(options: KoaRateLimitOptions): Middleware & RateLimitHandles {
  const engine = new Engine<Context>(
    options,
    {
      address: (ctx) => nodeReader.address(ctx.req),
      header: (ctx, name) => nodeReader.header(ctx.req, name),
      connection: (ctx) => ctx.req.socket ?? undefined,
    },
    ["onLimited"],
  );
  const onLimited = options.onLimited;
  return withHandles(async function sluiceRateLimit(ctx: Context, next: Next): Promise<void> {
    const pending = engine.decide(ctx);
    const verdict = isPromise(pending) ? await pending : pending;
    if (verdict === null) return next();
    // Node's setHeader directly: our values are valid strings, and Koa 3's `ctx.set` allocates
    // entry arrays per call, which costs more than the rest of the check (bench/http.mjs).
    const response = ctx.res;
    if (!response.headersSent) {
      engine.writeHeaders(
        verdict,
        (name, value) => response.setHeader(name, value),
        (name) => responseHeader(response, name),
      );
    }
    if (verdict.decision !== undefined) ctx.state.rateLimit = tighter(ctx.state.rateLimit, verdict.decision);
    if (verdict.status === 200) {
      // `count`: how the response ended decides whether this request keeps its units. Koa
      // writes the response after the middleware chain returns, so the raw response's end
      // events tell (an abort or a thrown handler end it without a status).
      if (!engine.observes(verdict)) return next();
      if (engine.countOn === "response") {
        settleOnEnd(engine, verdict, ctx, response, response);
        return next();
      }
      // `countOn: "handler"`: Koa writes nothing once the client is gone, so the chain's end
      // decides: the status the handlers left, or none when one threw. The lease is held until
      // the response ends: Koa writes the body (a stream too) after the chain returns.
      releaseOnResponseEnd(engine, verdict, response);
      return next().then(
        () => engine.settleCount(verdict, ctx, response, ctx.status),
        (error: unknown) => {
          engine.settleCount(verdict, ctx, response, undefined);
          throw error;
        },
      );
    }
    ctx.status = verdict.status;
    if (verdict.status === 429 && onLimited !== undefined) return onLimited(ctx, verdict.decision);
    // The type first: Koa would otherwise label a string body text/plain.
    ctx.type = PROBLEM_CONTENT_TYPE;
    ctx.body = engine.body(verdict);
  }, engine);
}

export type { AddressRef, HandleKey, PeekOptions, RateLimitHandles } from "./handles.ts";
export type { RateLimitOptions } from "./options.ts";
export type { LoadShedHandle, LoadShedOptions, ShedStats } from "./shed.ts";
export { loadShed } from "./shed-koa.ts";

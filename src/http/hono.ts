/**
 * `sluice/hono`: Hono middleware. Hono runs on many runtimes and the peer address lives in a
 * different place on each, so it is read from `@hono/node-server`'s `env.incoming`, Bun's
 * `server.requestIP`, or Deno's `info.remoteAddr`, or from your `address(c)` option.
 *
 * @example app.use("/api/*", rateLimit({ spec: { algorithm: "gcra", limit: 100, periodMs: 60_000 } }));
 */
import type { Context, MiddlewareHandler } from "hono";
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise } from "./engine.ts";
import { refusal, withHeaders } from "./fetch.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";

/** Options of the Hono middleware. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context> {
  /** The peer address for runtimes sluice does not detect (e.g. from `getConnInfo(c).remote.address`). */
  address?: (c: Context) => string | undefined;
  /** Builds the answer to a limited request; the rate-limit headers and `Retry-After` are added to it. */
  onLimited?: (c: Context, decision: Decision) => MaybePromise<Response>;
}

interface RuntimeEnv {
  incoming?: { socket?: { remoteAddress?: string } };
  requestIP?: (request: Request) => { address?: string } | null;
  remoteAddr?: { hostname?: string };
}

/** The peer address on Node (`@hono/node-server`), Bun and Deno; undefined elsewhere. */
export function runtimeAddress(c: Context): string | undefined {
  const env = c.env as RuntimeEnv | undefined;
  if (env === undefined || env === null) return undefined;
  const node = env.incoming?.socket?.remoteAddress;
  if (node !== undefined) return node;
  if (typeof env.requestIP === "function") return env.requestIP(c.req.raw)?.address ?? undefined;
  return env.remoteAddr?.hostname;
}

/** Hono middleware limiting each client. */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler {
  const engine = new Engine<Context>(options, {
    address: options.address ?? runtimeAddress,
    header: (c, name) => c.req.header(name),
  });
  const onLimited = options.onLimited;
  return async function sluiceRateLimit(c, next) {
    const pending = engine.decide(c);
    const verdict = isPromise(pending) ? await pending : pending;
    if (verdict === null) return next();
    const headers = new Headers();
    engine.writeHeaders(verdict, (name, value) => headers.set(name, value));
    if (verdict.status === 200) {
      await next();
      c.res = withHeaders(c.res, headers);
      return;
    }
    if (verdict.status === 429 && onLimited !== undefined)
      return withHeaders(await onLimited(c, verdict.decision), headers);
    return refusal(engine as never, verdict, headers);
  };
}

export type { RateLimitOptions } from "./options.ts";

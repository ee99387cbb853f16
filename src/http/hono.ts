/**
 * `sluice/hono`: Hono middleware. Hono runs on many runtimes and the peer address lives in a
 * different place on each, so it is read from `@hono/node-server`'s `env.incoming`, Bun's
 * `server.requestIP`, or Deno's `info.remoteAddr`, or from your `address(c)` option.
 * The decision is `c.get("rateLimit")` (typed through `ContextVariableMap`).
 *
 * @example app.use("/api/*", rateLimit({ spec: { algorithm: "gcra", limit: 100, periodMs: 60_000 } }));
 */
import type { Context, MiddlewareHandler } from "hono";
import type { Decision } from "../algorithms/decision.ts";
import { socketPeer } from "./client-address.ts";
import { type CheckedVerdict, Engine, isPromise } from "./engine.ts";
import { passOn, refusal, withHeaders } from "./fetch.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import { nodeResponse } from "./hono-node.ts";
import { releaseOnResponseEnd } from "./node.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { tighter } from "./stack.ts";

/** The context variables the middleware sets: `c.get("rateLimit")`. */
export interface RateLimitVariables {
  /** The decision of the rate limiter(s) that checked this request (the tightest, when stacked). */
  rateLimit: Decision | undefined;
}

declare module "hono" {
  interface ContextVariableMap extends RateLimitVariables {}
}

/** Options of the Hono middleware. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context, Response> {
  /** The peer address for runtimes sluice does not detect (e.g. from `getConnInfo(c).remote.address`). */
  address?: (c: Context) => string | undefined;
  /** Builds the answer to a limited request; the rate-limit headers and `Retry-After` are added to it. */
  onLimited?: (c: Context, decision: Decision) => MaybePromise<Response>;
}

interface RuntimeEnv {
  incoming?: { socket?: Parameters<typeof socketPeer>[0] };
  requestIP?: (request: Request) => { address?: string } | null;
  remoteAddr?: { hostname?: string };
}

/** The peer address on Node (`@hono/node-server`), Bun and Deno; undefined elsewhere. */
export function runtimeAddress(c: Context): string | undefined {
  const env = c.env as RuntimeEnv | undefined;
  if (env === undefined || env === null) return undefined;
  const node = socketPeer(env.incoming?.socket);
  if (node !== undefined) return node;
  if (typeof env.requestIP === "function") return env.requestIP(c.req.raw)?.address ?? undefined;
  return env.remoteAddr?.hostname;
}

/** Hono middleware limiting each client. */
export function rateLimit(
  options: HonoRateLimitOptions,
): MiddlewareHandler<{ Variables: RateLimitVariables }> & RateLimitHandles {
  const engine = new Engine<Context, Response>(
    options,
    { address: options.address ?? runtimeAddress, header: (c, name) => c.req.header(name) },
    ["onLimited", "address"],
  );
  const onLimited = options.onLimited;
  const middleware: MiddlewareHandler<{ Variables: RateLimitVariables }> = async function sluiceRateLimit(c, next) {
    const pending = engine.decide(c);
    const verdict = isPromise(pending) ? await pending : pending;
    if (verdict === null) return next();
    if (verdict.decision !== undefined) c.set("rateLimit", tighter(c.get("rateLimit"), verdict.decision));
    if (verdict.status === 200) {
      // On Node the lease is held until the raw response ends (a streamed body included), as
      // Hono's loadShed holds its slot; the Response returned below may still be streaming.
      const raw = engine.observes(verdict) ? nodeResponse(c) : undefined;
      if (raw !== undefined) releaseOnResponseEnd(engine, verdict as CheckedVerdict, raw);
      // Hono turns a thrown handler into c.res (its onError answer), so next() settles with a status.
      const response = await passOn(
        engine,
        verdict,
        c,
        async () => {
          await next();
          return c.res;
        },
        // Only read when observing: @hono/node-server builds the full Request on first access.
        engine.observes(verdict) && engine.countOn === "response" ? c.req.raw.signal : undefined,
        raw !== undefined,
      );
      if (response === c.res) return; // headers were added in place
      // Hono's setter copies the old response's headers over the new one's; ours are merged already.
      c.res = undefined;
      c.res = response;
      return;
    }
    const headers = new Headers();
    engine.writeHeaders(verdict, (name, value) => headers.set(name, value));
    if (verdict.status === 429 && onLimited !== undefined)
      return withHeaders(await onLimited(c, verdict.decision), headers);
    return refusal(engine as Engine<never, never>, verdict, headers);
  };
  return withHandles(middleware, engine);
}

export type { AddressRef, HandleKey, PeekOptions, RateLimitHandles } from "./handles.ts";
export type { RateLimitOptions } from "./options.ts";
export type { LoadShedHandle, LoadShedOptions, ShedStats } from "./shed.ts";
export { loadShed } from "./shed-hono.ts";

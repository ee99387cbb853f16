/**
 * `rateLimitFetch` for Web `Request`/`Response` handlers (Deno, Bun, Cloudflare Workers, Node's
 * own fetch-style servers). A `Request` does not carry the peer address, so the caller passes
 * it: `limit(request, () => handler(request), address)`.
 */
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise, type RequestReader, type Verdict } from "./engine.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";

/** Options of {@link rateLimitFetch}: the shared options plus `onLimited`. */
export interface FetchRateLimitOptions extends RateLimitOptions<Request> {
  /** Builds the answer to a limited request; the rate-limit headers and `Retry-After` are added to it. */
  onLimited?: (request: Request, decision: Decision) => MaybePromise<Response>;
}

/** The handler wrapper `rateLimitFetch` returns. */
export type FetchRateLimit = (
  request: Request,
  next: () => MaybePromise<Response>,
  address?: string,
) => Promise<Response>;

/** Sets `headers` on `response`, copying it first when its headers are immutable (e.g. from `fetch`). */
export function withHeaders(response: Response, headers: Headers): Response {
  let out = response;
  try {
    for (const [name, value] of headers) out.headers.set(name, value);
  } catch {
    out = new Response(response.body, response);
    for (const [name, value] of headers) out.headers.set(name, value);
  }
  return out;
}

/** The Response for a verdict the middleware answers itself (429 / 503). */
export function refusal(engine: Engine<never>, verdict: Verdict, headers: Headers): Response {
  headers.set("Content-Type", PROBLEM_CONTENT_TYPE);
  return new Response(engine.body(verdict), { status: verdict.status, headers });
}

/**
 * Rate limiting for fetch handlers.
 *
 * @example
 * const limit = rateLimitFetch({ spec: { algorithm: "gcra", limit: 100, periodMs: 60_000 } });
 * Deno.serve((req, info) => limit(req, () => handle(req), info.remoteAddr.hostname));
 */
export function rateLimitFetch(options: FetchRateLimitOptions): FetchRateLimit {
  const addresses = new WeakMap<Request, string>();
  return webHandler(new Engine<Request>(options, webReader(addresses)), addresses, options.onLimited);
}

/** Reads Web requests: the peer address the caller passed (kept in `addresses`), `Headers.get`. */
export function webReader(addresses: WeakMap<Request, string>): RequestReader<Request> {
  return {
    address: (request) => addresses.get(request),
    header: (request, name) => request.headers.get(name) ?? undefined,
  };
}

/** The fetch-handler wrapper around an engine that can read Web requests. */
export function webHandler(
  engine: Engine<Request>,
  addresses: WeakMap<Request, string>,
  onLimited: FetchRateLimitOptions["onLimited"],
): FetchRateLimit {
  return async function sluiceFetch(request, next, address) {
    if (address !== undefined) addresses.set(request, address);
    const pending = engine.decide(request);
    const verdict = isPromise(pending) ? await pending : pending;
    if (verdict === null) return next();
    const headers = new Headers();
    engine.writeHeaders(verdict, (name, value) => headers.set(name, value));
    if (verdict.status === 200) return withHeaders(await next(), headers);
    if (verdict.status === 429 && onLimited !== undefined) {
      return withHeaders(await onLimited(request, verdict.decision), headers);
    }
    return refusal(engine as Engine<never>, verdict, headers);
  };
}

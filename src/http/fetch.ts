/**
 * `rateLimitFetch` for Web `Request`/`Response` handlers (Deno, Bun, Cloudflare Workers, Node's
 * own fetch-style servers). A `Request` does not carry the peer address, so the caller passes
 * it: `limit(request, () => handler(request), address)`.
 */
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise, type RequestReader, type Verdict } from "./engine.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";

/** Options of {@link rateLimitFetch}: the shared options plus `onLimited`. */
export interface FetchRateLimitOptions extends RateLimitOptions<Request, Response> {
  /** Builds the answer to a limited request; the rate-limit headers and `Retry-After` are added to it. */
  onLimited?: (request: Request, decision: Decision) => MaybePromise<Response>;
}

/** The handler wrapper `rateLimitFetch` returns; `next` gets the decision (undefined when skipped / allow-listed). */
export type FetchRateLimit = (
  request: Request,
  next: (decision: Decision | undefined) => MaybePromise<Response>,
  address?: string,
) => Promise<Response>;

/** What `rateLimitFetch` returns: the wrapper plus the handles on its state. */
export type FetchRateLimiter = FetchRateLimit & RateLimitHandles;

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

/** `response` with the verdict's headers merged into those it already has (stacked limiters). */
export function withVerdictHeaders(engine: Engine<never, never>, verdict: Verdict, response: Response): Response {
  const headers = new Headers();
  engine.writeHeaders(
    verdict,
    (name, value) => headers.set(name, value),
    (name) => headers.get(name) ?? response.headers.get(name) ?? undefined,
  );
  return withHeaders(response, headers);
}

/**
 * Runs the handler behind a passing verdict: reports how it ended when `count` needs it (a
 * thrown handler never completed) and adds the headers. Streaming bodies count by status:
 * a Response does not tell when (or whether) its body was fully read. `leaseReleasedElsewhere`:
 * the caller releases the lease itself (Hono on Node, when the raw response ends), so only the
 * `count` part is settled here.
 */
export async function passOn<Req>(
  engine: Engine<Req, Response>,
  verdict: Verdict,
  request: Req,
  next: () => MaybePromise<Response>,
  signal?: AbortSignal,
  leaseReleasedElsewhere = false,
): Promise<Response> {
  if (!engine.observes(verdict)) return withVerdictHeaders(engine as Engine<never, never>, verdict, await next());
  let settled = false;
  const settle = (response: Response | undefined) => {
    if (settled) return;
    settled = true;
    signal?.removeEventListener("abort", aborted);
    if (leaseReleasedElsewhere) engine.settleCount(verdict, request, response as Response, response?.status);
    else engine.settle(verdict, request, response as Response, response?.status);
  };
  // The client went away before the handler answered: that request did not succeed — unless
  // `countOn: "handler"`, where the handler's own answer decides.
  const aborted = () => settle(undefined);
  if (engine.countOn === "response") signal?.addEventListener("abort", aborted, { once: true });
  let response: Response | undefined;
  try {
    response = await next();
  } finally {
    settle(response);
  }
  return withVerdictHeaders(engine as Engine<never, never>, verdict, response);
}

/** The Response for a verdict the middleware answers itself (400 / 403 / 429 / 503). */
export function refusal(engine: Engine<never, never>, verdict: Verdict, headers: Headers): Response {
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
export function rateLimitFetch(options: FetchRateLimitOptions): FetchRateLimiter {
  const addresses = new WeakMap<Request, string>();
  const engine = new Engine<Request, Response>(options, webReader(addresses), ["onLimited"]);
  return withHandles(webHandler(engine, addresses, options.onLimited), engine);
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
  engine: Engine<Request, Response>,
  addresses: WeakMap<Request, string>,
  onLimited: FetchRateLimitOptions["onLimited"],
): FetchRateLimit {
  return async function sluiceFetch(request, next, address) {
    if (address !== undefined) addresses.set(request, address);
    const pending = engine.decide(request);
    const verdict = isPromise(pending) ? await pending : pending;
    if (verdict === null) return next(undefined);
    if (verdict.status === 200) return passOn(engine, verdict, request, () => next(verdict.decision), request.signal);
    const headers = new Headers();
    engine.writeHeaders(verdict, (name, value) => headers.set(name, value));
    if (verdict.status === 429 && onLimited !== undefined) {
      return withHeaders(await onLimited(request, verdict.decision), headers);
    }
    return refusal(engine as Engine<never, never>, verdict, headers);
  };
}

/**
 * `sluice/http`: the framework-neutral pieces (client keys, header values, problem bodies)
 * and `rateLimit` for Node's `http` module plus `rateLimitFetch` for Web Request/Response
 * handlers. Express, Fastify and Hono adapters live in `sluice/express`, `sluice/fastify`,
 * `sluice/hono`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Engine } from "./engine.ts";
import { type FetchRateLimit, webHandler, webReader } from "./fetch.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import { type NodeRateLimit, type NodeRateLimitOptions, nodeHandler, nodeReader } from "./node.ts";
import type { RateLimitOptions } from "./options.ts";

/** What `rateLimit` returns: Node middleware that also answers Web `Request`s (and has `.fetch`). */
export type RateLimit<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> = NodeRateLimit<Req, Res> &
  FetchRateLimit &
  RateLimitHandles & {
    /** The Web `Request`/`Response` flavour: `limit.fetch(request, () => handler(request), address)`. */
    fetch: FetchRateLimit;
  };

/** Options of `rateLimit`: the Node options. `onLimited` answers Node requests; Web requests get the problem response (use `rateLimitFetch` for a Web `onLimited`). */
export type RateLimitMiddlewareOptions<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> = NodeRateLimitOptions<Req, Res>;

const isWebRequest = (value: unknown): value is Request => typeof Request === "function" && value instanceof Request;

/**
 * Rate limiting for Node's `http` server (and connect-style `(req, res, next)` stacks), and for
 * Web `Request`/`Response` handlers: called with a `Request` it answers like `rateLimitFetch`.
 *
 * @example
 * const limit = rateLimit({ spec: { algorithm: "token-bucket", capacity: 20, refillPerSecond: 5 } });
 * http.createServer(async (req, res) => {
 *   if (!(await limit(req, res))) return; // answered 429 / 503
 *   res.end("hello");
 * });
 * // fetch handlers: const response = await limit(request, () => handle(request), clientAddress);
 */
export function rateLimit<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  options: RateLimitMiddlewareOptions<Req, Res>,
): RateLimit<Req, Res> {
  // One engine (so one limiter and one state) reads both kinds of request.
  const addresses = new WeakMap<Request, string>();
  const web = webReader(addresses);
  const engine = new Engine<Req | Request, Res | Response>(
    options as RateLimitOptions<Req | Request, Res | Response>,
    {
      address: (r) => (isWebRequest(r) ? web.address(r) : nodeReader.address(r)),
      header: (r, name) => (isWebRequest(r) ? web.header(r, name) : nodeReader.header(r, name)),
      // A Web Request has no `socket`: read it without the `instanceof Request` walk per request.
      connection: (r) => (r as { socket?: object | null }).socket ?? undefined,
    },
    ["onLimited"],
  );
  const node = nodeHandler<Req, Res>(engine as unknown as Engine<Req, Res>, options.onLimited);
  // `onLimited` is Node-shaped ((req, res, decision)); Web requests get the problem response.
  const fetch = webHandler(engine as unknown as Engine<Request, Response>, addresses, undefined);
  function sluiceRateLimit(first: unknown, second: unknown, third?: unknown): unknown {
    // Only the fetch flavour has a function second (its handler; Node's is the response), so a
    // Node request never pays for the `instanceof Request` walk of its prototype chain.
    if (typeof second === "function" && isWebRequest(first))
      return fetch(first, second as Parameters<FetchRateLimit>[1], third as string | undefined);
    return (node as (a: unknown, b: unknown, c?: unknown) => unknown)(first, second, third);
  }
  return withHandles(Object.assign(sluiceRateLimit, { fetch }), engine) as unknown as RateLimit<Req, Res>;
}

export {
  addressKey,
  boundKey,
  type ClientKeyOptions,
  clientKey,
  forwardedFor,
  MAX_KEY_LENGTH,
  type ProxyHeader,
  parseTrust,
  resolveClient,
  storeKey,
  type Trust,
  type TrustProxy,
} from "./client-key.ts";
export type { Charge } from "./count-mode.ts";
export {
  type CheckedVerdict,
  Engine,
  type GetHeader,
  isPromise,
  type RefusedVerdict,
  type RequestReader,
  type Verdict,
} from "./engine.ts";
export { type FetchRateLimit, type FetchRateLimiter, type FetchRateLimitOptions, rateLimitFetch } from "./fetch.ts";
export {
  type AddressRef,
  type HandleKey,
  handleStoreKey,
  type PeekOptions,
  type RateLimitHandles,
  withHandles,
} from "./handles.ts";
export {
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type LegacyReset,
  type PolicySet,
  retryAfterSeconds,
  type SetHeader,
  writeRateLimitHeaders,
} from "./headers.ts";
export { formatIp, type IpBytes, type IpRange, inRange, parseIp, parseRanges } from "./ip-address.ts";
export { type NodeRateLimit, type NodeRateLimitOptions, onResponseEnd, responseHeader } from "./node.ts";
export type {
  CountMode,
  CountOn,
  DecisionInfo,
  MaybePromise,
  RateLimitOptions,
  UnknownTierPolicy,
} from "./options.ts";
export { type Policy, policiesFor, windowSeconds } from "./policy.ts";
export {
  PROBLEM_CONTENT_TYPE,
  type ProblemDetails,
  QUOTA_EXCEEDED_TYPE,
  quotaExceeded,
  storeUnavailable,
} from "./problem.ts";
export {
  type FetchLoadShed,
  type GradientOptions,
  type LoadShed,
  type LoadShedHandle,
  type LoadShedOptions,
  loadShed,
  type NodeLoadShed,
  overloaded,
  type Reserve,
  type ShedStats,
} from "./shed.ts";
export { listNames, tighter } from "./stack.ts";

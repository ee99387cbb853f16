/**
 * `sluice/http`: the framework-neutral pieces (client keys, header values, problem bodies)
 * and `rateLimit` for Node's `http` module plus `rateLimitFetch` for Web Request/Response
 * handlers. Express, Fastify and Hono adapters live in `sluice/express`, `sluice/fastify`,
 * `sluice/hono`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type NodeRateLimit, type NodeRateLimitOptions, nodeMiddleware } from "./node.ts";

/**
 * Rate limiting for Node's `http` server (and connect-style `(req, res, next)` stacks).
 *
 * @example
 * const limit = rateLimit({ spec: { algorithm: "token-bucket", capacity: 20, refillPerSecond: 5 } });
 * http.createServer(async (req, res) => {
 *   if (!(await limit(req, res))) return; // answered 429 / 503
 *   res.end("hello");
 * });
 */
export function rateLimit<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  options: NodeRateLimitOptions<Req, Res>,
): NodeRateLimit<Req, Res> {
  return nodeMiddleware(options);
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
  type Trust,
  type TrustProxy,
} from "./client-key.ts";
export { Engine, type RequestReader, type Verdict } from "./engine.ts";
export { type FetchRateLimit, type FetchRateLimitOptions, rateLimitFetch } from "./fetch.ts";
export {
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type PolicySet,
  retryAfterSeconds,
  type SetHeader,
  writeRateLimitHeaders,
} from "./headers.ts";
export { formatIp, type IpBytes, type IpRange, inRange, parseIp, parseRanges } from "./ip-address.ts";
export type { NodeRateLimit, NodeRateLimitOptions } from "./node.ts";
export type { DecisionInfo, MaybePromise, RateLimitOptions } from "./options.ts";
export { type Policy, policiesFor, windowSeconds } from "./policy.ts";
export {
  PROBLEM_CONTENT_TYPE,
  type ProblemDetails,
  QUOTA_EXCEEDED_TYPE,
  quotaExceeded,
  storeUnavailable,
} from "./problem.ts";

/**
 * `sluice/express`: Express (4 and 5) middleware. The client address comes from sluice's own
 * `trustProxy`, not Express's `trust proxy` setting, so the two cannot silently disagree.
 *
 * @example
 * app.use(rateLimit({ spec: { algorithm: "sliding-window", limit: 100, windowMs: 60_000 } }));
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Decision } from "../algorithms/decision.ts";
import { type NodeRateLimitOptions, nodeMiddleware } from "./node.ts";
import type { RateLimitOptions } from "./options.ts";

/** Options of the Express middleware. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /** Answers a limited request (status 429 and headers already set); must end the response. */
  onLimited?: (request: Request, response: Response, decision: Decision) => void;
}

/** Express middleware limiting each client; errors go to `next(error)`. */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  const middleware = nodeMiddleware<Request, Response>(options as NodeRateLimitOptions<Request, Response>);
  // A named function so stack traces and `app._router` listings say what it is.
  return function sluiceRateLimit(request: Request, response: Response, next: NextFunction): void {
    middleware(request, response, next);
  };
}

export type { RateLimitOptions } from "./options.ts";

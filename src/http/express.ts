/**
 * `sluice/express`: Express (4 and 5) middleware. The client address comes from sluice's own
 * `trustProxy`, not Express's `trust proxy` setting, so the two cannot silently disagree.
 *
 * @example
 * app.use(rateLimit({ spec: { algorithm: "sliding-window", limit: 100, windowMs: 60_000 } }));
 * app.get("/", (req, res) => res.send(`${req.rateLimit?.remaining} left`));
 *
 * `req.rateLimit` is typed: Express's `Request` extends Node's `IncomingMessage`, which
 * `sluice/http` augments.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Decision } from "../algorithms/decision.ts";
import { declareRateLimit } from "./express-request.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import { type NodeRateLimitOptions, nodeMiddleware } from "./node.ts";
import type { RateLimitOptions } from "./options.ts";

declare global {
  // Express's own extension point for request properties (what its typings tell plugins to use).
  namespace Express {
    interface Request {
      /** The decision of the rate limiter(s) that checked this request (the tightest, when stacked). */
      rateLimit?: Decision;
    }
  }
}

/** Options of the Express middleware. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request, Response> {
  /** Answers a limited request (status 429 and headers already set); must end the response. */
  onLimited?: (request: Request, response: Response, decision: Decision) => void;
}

/** Express middleware limiting each client; errors go to `next(error)`. */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler & RateLimitHandles {
  const middleware = nodeMiddleware<Request, Response>(options as NodeRateLimitOptions<Request, Response>);
  // The request prototype last given the `rateLimit` accessor (one per app: checked by identity).
  let declared: object | null = null;
  // A named function so stack traces and `app._router` listings say what it is.
  return withHandles(function sluiceRateLimit(request: Request, response: Response, next: NextFunction): void {
    const prototype = Object.getPrototypeOf(request) as object | null;
    if (prototype !== declared) {
      declareRateLimit(prototype);
      declared = prototype;
    }
    middleware(request, response, next);
  }, middleware);
}

export type { AddressRef, HandleKey, PeekOptions, RateLimitHandles } from "./handles.ts";
export type { RateLimitOptions } from "./options.ts";
export type { LoadShedHandle, LoadShedOptions, ShedStats } from "./shed.ts";
export { loadShed } from "./shed-express.ts";

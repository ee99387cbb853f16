/**
 * `rateLimit` for Node's `http` module and connect-style frameworks: `(req, res, next?)`.
 * With `next` it calls `next()` to pass and `next(error)` on errors (Express, connect); without
 * it returns whether to go on: `true`, or `false` once it has answered 429/503 itself.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise, type RequestReader, type Verdict } from "./engine.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";

/** Options of the Node `rateLimit`: the shared options plus `onLimited`. */
export interface NodeRateLimitOptions<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> extends RateLimitOptions<Req> {
  /**
   * Answers a limited request instead of the problem body. Status 429 and the rate-limit
   * headers (with `Retry-After`) are already set on `res`; it must end the response.
   */
  onLimited?: (request: Req, response: Res, decision: Decision) => void;
}

/** The middleware `rateLimit` returns. */
export interface NodeRateLimit<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> {
  /** Without `next`: true to go on, false when it answered (a promise only if a hook or the store is async). */
  (request: Req, response: Res): MaybePromise<boolean>;
  /** Connect style: calls `next()` to pass, `next(error)` on failure. */
  (request: Req, response: Res, next: (error?: unknown) => void): void;
}

/** Reads Node requests: the socket's peer address, headers joined as Node joins repeats. */
export const nodeReader: RequestReader<IncomingMessage> = {
  address: (request) => request.socket?.remoteAddress,
  header: (request, name) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  },
};

/** Builds the `(req, res, next?)` middleware for any Node-based request/response pair. */
export function nodeMiddleware<Req extends IncomingMessage, Res extends ServerResponse>(
  options: NodeRateLimitOptions<Req, Res>,
): NodeRateLimit<Req, Res> {
  return nodeHandler(new Engine<Req>(options, nodeReader), options.onLimited);
}

/** The `(req, res, next?)` middleware around an engine that can read Node requests. */
export function nodeHandler<Req extends IncomingMessage, Res extends ServerResponse>(
  engine: Engine<Req>,
  onLimited: NodeRateLimitOptions<Req, Res>["onLimited"],
): NodeRateLimit<Req, Res> {
  const finish = (verdict: Verdict | null, request: Req, response: Res): boolean => {
    if (verdict === null) return true;
    if (!response.headersSent) engine.writeHeaders(verdict, (name, value) => response.setHeader(name, value));
    if (verdict.status === 200) return true;
    response.statusCode = verdict.status;
    if (verdict.status === 429 && onLimited !== undefined) {
      onLimited(request, response, verdict.decision);
      return false;
    }
    response.setHeader("Content-Type", PROBLEM_CONTENT_TYPE);
    response.end(engine.body(verdict));
    return false;
  };

  function sluiceRateLimit(
    request: Req,
    response: Res,
    next?: (error?: unknown) => void,
  ): MaybePromise<boolean> | undefined {
    if (next === undefined) {
      const verdict = engine.decide(request);
      return isPromise(verdict)
        ? verdict.then((v) => finish(v, request, response))
        : finish(verdict, request, response);
    }
    const done = (verdict: Verdict | null) => {
      let pass: boolean;
      try {
        pass = finish(verdict, request, response);
      } catch (error) {
        next(error);
        return;
      }
      if (pass) next();
    };
    let verdict: MaybePromise<Verdict | null>;
    try {
      verdict = engine.decide(request);
    } catch (error) {
      next(error);
      return;
    }
    if (isPromise(verdict)) verdict.then(done, next);
    else done(verdict);
  }
  return sluiceRateLimit as NodeRateLimit<Req, Res>;
}

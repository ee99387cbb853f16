/**
 * `rateLimit` for Node's `http` module and connect-style frameworks: `(req, res, next?)`.
 * With `next` it calls `next()` to pass and `next(error)` on errors (Express, connect); without
 * it returns whether to go on: `true`, or `false` once it has answered itself (403/429/503).
 * The decision is left on `req.rateLimit` for the handler.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Decision } from "../algorithms/decision.ts";
import { socketPeer } from "./client-address.ts";
import { type CheckedVerdict, Engine, isPromise, type RequestReader, type Verdict } from "./engine.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";
import { tighter } from "./stack.ts";

declare module "http" {
  interface IncomingMessage {
    /** The decision of the rate limiter(s) that checked this request (the tightest, when stacked). */
    rateLimit?: Decision;
  }
}

/** Options of the Node `rateLimit`: the shared options plus `onLimited`. */
export interface NodeRateLimitOptions<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> extends RateLimitOptions<Req, Res> {
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
  address: (request) => socketPeer(request.socket),
  // (A request built by hand, as some tests and frameworks' inject() do, may have none.)
  connection: (request) => request.socket ?? undefined,
  header: (request, name) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  },
};

/** Reads a header already set on a Node response, as one string. */
export function responseHeader(response: ServerResponse, name: string): string | undefined {
  const value = response.getHeader(name);
  return value === undefined ? undefined : Array.isArray(value) ? value.join(", ") : String(value);
}

/**
 * Calls `done` once when `response` ends: with its status once fully sent ('finish'), or with
 * undefined when the connection closed first (client abort, a handler that never answered).
 * With `untilHandler` (`countOn: "handler"`), a closed connection does not end it: the status
 * the handler set when it called `end()` does — Node emits no 'finish' once the socket is
 * gone, so `end` is wrapped then (only on this response, only after an early close).
 */
export function onResponseEnd(
  response: ServerResponse,
  done: (status: number | undefined) => void,
  untilHandler = false,
): void {
  if (!untilHandler) {
    // The common case, in one closure: 'close' comes once, and the early-close branch returns.
    if (response.destroyed && !response.writableFinished) done(undefined);
    else response.on("close", () => done(response.writableFinished ? response.statusCode : undefined));
    return;
  }
  let ended = false;
  const end = (status: number | undefined) => {
    if (ended) return;
    ended = true;
    done(status);
  };
  // (`countOn: "handler"` from here on.)
  const left = () => {
    if (response.writableEnded) {
      end(response.statusCode);
      return;
    }
    const original = response.end;
    response.end = function sluiceHandlerEnd(this: ServerResponse, ...args: unknown[]) {
      end(response.statusCode);
      return (original as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse["end"];
  };
  // Closed before the middleware looked (the client left during an async hook): no event follows.
  if (response.destroyed && !response.writableFinished) {
    left();
    return;
  }
  // One listener: Node emits 'close' on every response, after 'finish' when it was fully sent
  // (on the next tick), alone when the connection went first. `on`, not `once`: it fires once
  // anyway, and `once` allocates a wrapper per response.
  response.on("close", () => (response.writableFinished ? end(response.statusCode) : left()));
}

/** Reports to `engine` how the response of a passing `verdict` ended (`count`), on its Node response `raw`. */
export function settleOnEnd<Req, Res>(
  engine: Engine<Req, Res>,
  verdict: CheckedVerdict,
  request: Req,
  response: Res,
  raw: ServerResponse,
): void {
  onResponseEnd(raw, (status) => engine.settle(verdict, request, response, status), engine.countOn === "handler");
}

/**
 * Releases the lease of a passing `verdict` (if it holds one) when the Node response `raw`
 * ends, finished or closed: a streamed body holds its slot until it is sent, as `loadShed`
 * holds its own (the same {@link onResponseEnd}). For adapters that report the handler's answer
 * apart, through `engine.settleCount`.
 */
export function releaseOnResponseEnd<Req, Res>(
  engine: Engine<Req, Res>,
  verdict: CheckedVerdict,
  raw: ServerResponse,
): void {
  if (verdict.decision.release !== undefined) onResponseEnd(raw, () => engine.release(verdict));
}

/** Builds the `(req, res, next?)` middleware for any Node-based request/response pair. */
export function nodeMiddleware<Req extends IncomingMessage, Res extends ServerResponse>(
  options: NodeRateLimitOptions<Req, Res>,
): NodeRateLimit<Req, Res> & RateLimitHandles {
  const engine = new Engine<Req, Res>(options, nodeReader, ["onLimited"]);
  return withHandles(nodeHandler(engine, options.onLimited), engine);
}

/** The `(req, res, next?)` middleware around an engine that can read Node requests. */
export function nodeHandler<Req extends IncomingMessage, Res extends ServerResponse>(
  engine: Engine<Req, Res>,
  onLimited: NodeRateLimitOptions<Req, Res>["onLimited"],
): NodeRateLimit<Req, Res> {
  // The response whose headers are being written: `writeHeaders` calls `set`/`get` synchronously,
  // so one slot per middleware serves every request, and no closure is made per request.
  let current: Res | undefined;
  const set = (name: string, value: string): void => {
    (current as Res).setHeader(name, value);
  };
  const get = (name: string): string | undefined => responseHeader(current as Res, name);
  const finish = (verdict: Verdict | null, request: Req, response: Res): boolean => {
    if (verdict === null) return true;
    if (verdict.decision !== undefined) request.rateLimit = tighter(request.rateLimit, verdict.decision);
    if (!response.headersSent) {
      const previous = current;
      current = response;
      try {
        engine.writeHeaders(verdict, set, get);
      } finally {
        current = previous;
      }
    }
    if (verdict.status === 200) {
      if (engine.observes(verdict)) settleOnEnd(engine, verdict, request, response, response);
      return true;
    }
    response.statusCode = verdict.status;
    if (verdict.status === 429 && onLimited !== undefined) {
      onLimited(request, response, verdict.decision);
      return false;
    }
    response.setHeader("Content-Type", PROBLEM_CONTENT_TYPE);
    response.end(engine.body(verdict));
    return false;
  };
  /** Connect style: `next()` to pass, `next(error)` when answering failed. */
  const proceed = (verdict: Verdict | null, request: Req, response: Res, next: (error?: unknown) => void): void => {
    let pass: boolean;
    try {
      pass = finish(verdict, request, response);
    } catch (error) {
      next(error);
      return;
    }
    if (pass) next();
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
    let verdict: MaybePromise<Verdict | null>;
    try {
      verdict = engine.decide(request);
    } catch (error) {
      next(error);
      return;
    }
    if (isPromise(verdict)) verdict.then((v) => proceed(v, request, response, next), next);
    else proceed(verdict, request, response, next);
  }
  return sluiceRateLimit as NodeRateLimit<Req, Res>;
}

/**
 * `loadShed` for Node's `http` module (and connect-style stacks) and for Web `Request` /
 * `Response` handlers, plus what every framework's `loadShed` shares: the 503 answer of a shed
 * request (status, `Retry-After`, problem+json) and the release when a Node response ends.
 * The shedding itself is src/shed/.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LoadShedOptions } from "../shed/options.ts";
import type { LoadShedHandle, Release } from "../shed/shedder.ts";
import { Shedder } from "../shed/shedder.ts";
import { isPromise } from "./maybe-promise.ts";
import type { MaybePromise } from "./options.ts";
import { PROBLEM_CONTENT_TYPE, type ProblemDetails, problem } from "./problem.ts";
import { releaseWhenResponseEnds } from "./release-on-finish.ts";

/** The status of a shed request. */
export const SHED_STATUS = 503;

/** The problem body of a shed request (`urn:sluice:problem:overloaded`). */
export function overloaded(retryAfterSeconds: number): ProblemDetails {
  const s = retryAfterSeconds === 1 ? "" : "s";
  return problem(
    SHED_STATUS,
    "overloaded",
    "Service overloaded",
    `The server is shedding load to stay responsive; retry after ${retryAfterSeconds} second${s}.`,
  );
}

/** A shed answer, built once per `loadShed`: every shed request gets the same one. */
export interface ShedAnswer {
  status: typeof SHED_STATUS;
  retryAfter: string;
  body: string;
}

/** The answer of `shedder`'s shed requests. */
export function shedAnswer(shedder: Shedder<never>): ShedAnswer {
  const seconds = shedder.retryAfterSeconds;
  return { status: SHED_STATUS, retryAfter: String(seconds), body: JSON.stringify(overloaded(seconds)) };
}

/** Answers a shed request on a Node response. */
export function writeShed(response: ServerResponse, answer: ShedAnswer): void {
  response.statusCode = answer.status;
  response.setHeader("Retry-After", answer.retryAfter);
  response.setHeader("Content-Type", PROBLEM_CONTENT_TYPE);
  response.end(answer.body);
}

/** The Web `Response` of a shed request. */
export function shedResponse(answer: ShedAnswer): Response {
  return new Response(answer.body, {
    status: answer.status,
    headers: { "Retry-After": answer.retryAfter, "Content-Type": PROBLEM_CONTENT_TYPE },
  });
}

/**
 * Releases when the Node `response` ends: finished (its latency counts for the adaptive limit),
 * or closed first (a client that left, a handler that never answered: no latency sample). On
 * Node's own http server this adds no listener per response (see {@link releaseWhenResponseEnds}).
 */
export function releaseOnEnd(response: ServerResponse, release: Release): void {
  releaseWhenResponseEnds(response, release);
}

/** `target` with the handle methods of `shedder` (`stats`, `prometheus`, `close`). */
export function withShedHandle<T extends object>(target: T, shedder: LoadShedHandle): T & LoadShedHandle {
  return Object.assign(target, {
    stats: () => shedder.stats(),
    prometheus: () => shedder.prometheus(),
    close: () => shedder.close(),
  });
}

/** The Node middleware of `loadShed`. */
export interface NodeLoadShed<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> {
  /** Without `next`: true to go on, false when it answered 503 (a promise of it with an async fleet `store`: `await` it). */
  (request: Req, response: Res): MaybePromise<boolean>;
  /** Connect style: `next()` to go on, `next(error)` when `priority` threw. */
  (request: Req, response: Res, next: (error?: unknown) => void): void;
}

/** The Web flavour: `shed(request, () => handler(request))`. */
export type FetchLoadShed = (request: Request, next: () => MaybePromise<Response>) => Promise<Response>;

/** The `(req, res, next?)` middleware around a shedder. */
export function nodeShedHandler<Req extends IncomingMessage, Res extends ServerResponse>(
  shedder: Shedder<Req>,
): NodeLoadShed<Req, Res> {
  const answer = shedAnswer(shedder as Shedder<never>);
  /** Answers a shed request, or releases the admitted one when its response ends; true to go on. */
  const settle = (release: Release | undefined, response: Res): boolean => {
    if (release === undefined) {
      writeShed(response, answer);
      return false;
    }
    releaseOnEnd(response, release);
    return true;
  };
  function sluiceLoadShed(
    request: Req,
    response: Res,
    next?: (error?: unknown) => void,
  ): MaybePromise<boolean> | undefined {
    let admitted: MaybePromise<Release | undefined>;
    try {
      admitted = shedder.admit(request);
    } catch (error) {
      if (next === undefined) throw error;
      next(error);
      return;
    }
    // A fleet limit on an async store (Redis): the answer comes later.
    if (isPromise(admitted)) {
      const pass = admitted.then((release) => settle(release, response));
      if (next === undefined) return pass;
      pass.then((go) => go && next(), next);
      return;
    }
    const pass = settle(admitted, response);
    if (next === undefined) return pass;
    if (pass) next();
  }
  return sluiceLoadShed as NodeLoadShed<Req, Res>;
}

/**
 * The fetch-handler wrapper around a shedder: releases when the handler's Response is returned
 * (a streamed body is not waited for: a Response does not tell when it was read), when the
 * handler throws, or when the request is aborted.
 */
export function fetchShedHandler<Req>(shedder: Shedder<Req>, signalOf: (request: Req) => AbortSignal | undefined) {
  const answer = shedAnswer(shedder as Shedder<never>);
  return async function sluiceLoadShedFetch(request: Req, next: () => MaybePromise<Response>): Promise<Response> {
    const admitted = shedder.admit(request);
    const release = isPromise(admitted) ? await admitted : admitted;
    if (release === undefined) return shedResponse(answer);
    const signal = signalOf(request);
    const aborted = () => release(false);
    // Aborted already (the client left while an async store decided): no event will follow.
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
    try {
      const response = await next();
      release(true);
      return response;
    } catch (error) {
      release(false);
      throw error;
    } finally {
      signal?.removeEventListener("abort", aborted);
    }
  };
}

/** What `loadShed` from `sluice/http` returns: Node middleware that also wraps fetch handlers (and has `.fetch`). */
export type LoadShed<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> = NodeLoadShed<Req, Res> &
  FetchLoadShed &
  LoadShedHandle & {
    /** The Web `Request`/`Response` flavour: `shed.fetch(request, () => handler(request))`. */
    fetch: FetchLoadShed;
  };

const isWebRequest = (value: unknown): value is Request => typeof Request === "function" && value instanceof Request;

/**
 * Load shedding for Node's `http` server (and connect-style stacks) and for fetch handlers:
 * past `limit` requests in flight (or under event-loop pressure), the least critical requests
 * are answered 503 with `Retry-After` and a problem body (SPEC §16, docs/concurrency.md).
 *
 * @example
 * const shed = loadShed({ limit: 100, priority: (req) => (req.url === "/health" ? 0 : 5), reserve: { 0: 0.1 } });
 * http.createServer((req, res) => {
 *   if (!shed(req, res)) return; // answered 503
 *   res.end("hello");
 * });
 * // fetch handlers: const response = await shed(request, () => handle(request));
 */
export function loadShed<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  options: LoadShedOptions<Req | Request>,
): LoadShed<Req, Res> {
  const shedder = new Shedder<Req | Request>(options);
  const node = nodeShedHandler<Req, Res>(shedder as Shedder<Req>);
  const fetch = fetchShedHandler<Request>(shedder as Shedder<Request>, (request) => request.signal);
  function sluiceLoadShed(first: unknown, second: unknown, third?: unknown): unknown {
    // Only the fetch flavour has a function second (its handler; Node's is the response), so a
    // Node request never pays for the `instanceof Request` walk of its prototype chain.
    if (typeof second === "function" && isWebRequest(first))
      return fetch(first, second as () => MaybePromise<Response>);
    return (node as (a: unknown, b: unknown, c?: unknown) => unknown)(first, second, third);
  }
  return withShedHandle(Object.assign(sluiceLoadShed, { fetch }), shedder) as unknown as LoadShed<Req, Res>;
}

export type { Reserve } from "../shed/admission.ts";
export type { GradientOptions } from "../shed/gradient.ts";
export type { ShedStats } from "../shed/metrics.ts";
export type { LoadShedOptions } from "../shed/options.ts";
export type { LoadShedHandle } from "../shed/shedder.ts";

/**
 * `SluiceGuard`: decides each HTTP request with the route's limit (its `@RateLimit`, else the
 * module-wide one), sets the rate-limit headers, leaves the decision on `request.rateLimit`,
 * and throws `RateLimitException` (429 / 503 problem) or your `onLimited` exception. A request
 * is decided once, however many SluiceGuards (or SluiceModules) run on it.
 * GraphQL resolvers are limited too, per HTTP request (its `req` in the GraphQL context, read
 * through `@nestjs/graphql`, loaded only when a GraphQL context arrives). WebSocket and
 * microservice contexts, and GraphQL operations without an HTTP request (subscriptions over
 * WebSockets), pass untouched.
 */

import type { ServerResponse } from "node:http";
import type { CanActivate, ExecutionContext } from "@nestjs/common";
import type { Reflector } from "@nestjs/core";
import type { Decision } from "../algorithms/decision.ts";
import { type Engine, isPromise, type Verdict } from "../http/engine.ts";
import { responseHeader, settleOnEnd } from "../http/node.ts";
import type { ProblemDetails } from "../http/problem.ts";
import { overloaded, releaseOnEnd } from "../http/shed.ts";
import { tighter } from "../http/stack.ts";
import type { Release, Shedder } from "../shed/shedder.ts";
import { RATE_LIMIT_METADATA, type RouteLimit, SKIP_RATE_LIMIT_METADATA, type SkippedMembers } from "./decorators.ts";
import { RateLimitException } from "./exception.ts";
import { SluiceLimits } from "./limits.ts";
import { graphqlExchange, nestCommonIfPresent, nestCore } from "./peers.ts";
import { writeThrottlerHeaders } from "./throttler-headers.ts";

/** A response that takes headers: Express's `res.header` / Node's `setHeader`, Fastify's `reply.header`. */
interface HeaderSink {
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

function setter(response: HeaderSink): (name: string, value: string) => void {
  // Node's own setHeader first (Express responses have it): Express's `header` adds checks we do not need.
  if (typeof response.setHeader === "function") return (name, value) => void response.setHeader?.(name, value);
  return (name, value) => void response.header?.(name, value);
}

type Handler = (...args: never[]) => unknown;

/**
 * Requests a SluiceGuard has already decided. The global guard plus `@UseGuards(SluiceGuard)`,
 * or `SluiceModule.forRoot` in several modules, run several guards on one request: only the
 * first decides (one count, one set of headers); the others let it through.
 */
const decided = new WeakSet<object>();
/** Requests the module's load shedder has already admitted (or shed). */
const admitted = new WeakSet<object>();

/** Refuses a shed request (503 problem, `Retry-After`), or releases an admitted one when its response ends. */
function shedOrHold(
  release: Release | undefined,
  shedder: Shedder<object>,
  response: HeaderSink & { raw?: ServerResponse },
): void {
  if (release !== undefined) {
    // Express responses are Node's; Fastify's reply wraps it as `raw`.
    releaseOnEnd((response.raw ?? response) as ServerResponse, release);
    return;
  }
  setter(response)("Retry-After", String(shedder.retryAfterSeconds));
  throw new RateLimitException(overloaded(shedder.retryAfterSeconds), undefined);
}

/** No limit on this route (skipped, or no limit applies). */
const NONE = null;

/** The guard; registered for every route by `SluiceModule.forRoot` unless `appGuard: false`. */
export class SluiceGuard implements CanActivate {
  readonly #limits: SluiceLimits;
  readonly #reflector: Reflector = new (nestCore().Reflector)();
  /** handler → controller class → the route's engine: metadata is read once per route, not per request. */
  readonly #routes = new WeakMap<Handler, WeakMap<object, Engine<unknown> | typeof NONE>>();

  constructor(limits: SluiceLimits) {
    this.#limits = limits;
  }

  /** True to let the request through; throws to refuse it. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const type = context.getType<string>();
    if (type !== "http" && type !== "graphql") return true;
    const shedder = this.#limits.shedder;
    if (shedder !== undefined && type === "http") {
      const { request, response } = httpExchange(context);
      // Admitted once per request, however many guards run on it.
      if (!admitted.has(request)) {
        admitted.add(request);
        const release = shedder.admit(request);
        if (isPromise(release)) {
          return release.then((r) => {
            shedOrHold(r, shedder, response);
            return this.#limit(context, type);
          });
        }
        shedOrHold(release, shedder, response);
      }
    }
    return this.#limit(context, type);
  }

  #limit(context: ExecutionContext, type: string): boolean | Promise<boolean> {
    const engine = this.#route(context.getHandler() as Handler, context.getClass());
    if (engine === NONE) return true;
    const exchange = type === "http" ? httpExchange(context) : graphqlExchange(context);
    if (exchange === undefined) return true; // a GraphQL operation with no HTTP request
    const { request, response } = exchange;
    // One HTTP request may run several resolvers (a query with two fields): it counts once.
    if (decided.has(request)) return true;
    decided.add(request);
    const pending = engine.decide(request);
    if (!isPromise(pending)) return this.#finish(engine, pending, context, request, response);
    return pending.then((verdict) => this.#finish(engine, verdict, context, request, response));
  }

  #route(handler: Handler, controller: object): Engine<unknown> | typeof NONE {
    let byClass = this.#routes.get(handler);
    if (byClass === undefined) this.#routes.set(handler, (byClass = new WeakMap()));
    let engine = byClass.get(controller);
    if (engine === undefined) {
      const targets = [handler, controller as Handler];
      const skip = this.#reflector.getAllAndOverride<boolean | SkippedMembers | undefined>(
        SKIP_RATE_LIMIT_METADATA,
        targets,
      );
      const limit = this.#reflector.getAllAndOverride<RouteLimit | undefined>(RATE_LIMIT_METADATA, targets);
      // Built before caching: a misconfigured limit throws on every request rather than once.
      engine = skip === true ? NONE : (this.#limits.engine(limit, typeof skip === "object" ? skip : undefined) ?? NONE);
      byClass.set(controller, engine);
    }
    return engine;
  }

  #finish(
    engine: Engine<unknown>,
    verdict: Verdict | null,
    context: ExecutionContext,
    request: object,
    response: HeaderSink & { raw?: ServerResponse },
  ): boolean {
    if (verdict === null) return true;
    // Express responses are Node's; Fastify's reply wraps it as `raw`.
    const node = (response.raw ?? response) as ServerResponse;
    if (this.#limits.throttlerHeaders && verdict.decision !== undefined) {
      writeThrottlerHeaders(verdict, setter(response));
    } else {
      engine.writeHeaders(verdict, setter(response), (name) =>
        typeof node.getHeader === "function" ? responseHeader(node, name) : undefined,
      );
    }
    const holder = request as { rateLimit?: Decision };
    if (verdict.decision !== undefined) holder.rateLimit = tighter(holder.rateLimit, verdict.decision);
    if (verdict.status === 200) {
      // `count`: the response's end decides whether this request keeps its units.
      if (engine.observes(verdict)) settleOnEnd(engine, verdict, request, node, node);
      return true;
    }
    const onLimited = this.#limits.onLimited;
    if (verdict.status === 429 && onLimited !== undefined) throw onLimited(context, verdict.decision);
    throw new RateLimitException(JSON.parse(engine.body(verdict)) as ProblemDetails, verdict.decision);
  }
}

/** The HTTP request and response of an `http` context. */
function httpExchange(context: ExecutionContext): { request: object; response: HeaderSink & { raw?: ServerResponse } } {
  const http = context.switchToHttp();
  return { request: http.getRequest<object>(), response: http.getResponse<HeaderSink & { raw?: ServerResponse }>() };
}

// Nest's DI metadata, applied as calls: no decorator syntax, no emitDecoratorMetadata needed
// (and none where Nest is not installed: nothing can use the guard there).
if (nestCommonIfPresent !== undefined) {
  nestCommonIfPresent.Injectable()(SluiceGuard);
  nestCommonIfPresent.Inject(SluiceLimits)(SluiceGuard, undefined, 0);
}

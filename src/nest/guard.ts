/**
 * `SluiceGuard`: decides each HTTP request with the route's limit (its `@RateLimit`, else the
 * module-wide one), sets the rate-limit headers, leaves the decision on `request.rateLimit`,
 * and throws `RateLimitException` (429 / 503 problem) or your `onLimited` exception.
 * Non-HTTP contexts (WebSockets, microservices) pass untouched.
 */
import type { CanActivate, ExecutionContext } from "@nestjs/common";
import { Inject, Injectable } from "@nestjs/common";
import { Reflector } from "@nestjs/core";
import type { Decision } from "../decision.ts";
import { type Engine, isPromise, type Verdict } from "../http/engine.ts";
import type { ProblemDetails } from "../http/problem.ts";
import { RATE_LIMIT_METADATA, type RouteLimit, SKIP_RATE_LIMIT_METADATA } from "./decorators.ts";
import { RateLimitException } from "./exception.ts";
import { SluiceLimits } from "./limits.ts";

/** A response that takes headers: Express's `res.header` / Node's `setHeader`, Fastify's `reply.header`. */
interface HeaderSink {
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

function setter(response: HeaderSink): (name: string, value: string) => void {
  if (typeof response.header === "function") return (name, value) => void response.header?.(name, value);
  return (name, value) => void response.setHeader?.(name, value);
}

/** The guard; registered for every route by `SluiceModule.forRoot` unless `appGuard: false`. */
export class SluiceGuard implements CanActivate {
  readonly #limits: SluiceLimits;
  readonly #reflector = new Reflector();

  constructor(limits: SluiceLimits) {
    this.#limits = limits;
  }

  /** True to let the request through; throws to refuse it. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType() !== "http") return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.#reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT_METADATA, targets) === true) return true;
    const engine = this.#limits.engine(
      this.#reflector.getAllAndOverride<RouteLimit | undefined>(RATE_LIMIT_METADATA, targets),
    );
    if (engine === undefined) return true;
    const http = context.switchToHttp();
    const request: object = http.getRequest();
    const pending = engine.decide(request);
    if (!isPromise(pending)) return this.#finish(engine, pending, context, request);
    return pending.then((verdict) => this.#finish(engine, verdict, context, request));
  }

  #finish(engine: Engine<unknown>, verdict: Verdict | null, context: ExecutionContext, request: object): boolean {
    if (verdict === null) return true;
    engine.writeHeaders(verdict, setter(context.switchToHttp().getResponse<HeaderSink>()));
    (request as { rateLimit?: Decision }).rateLimit = verdict.decision;
    if (verdict.status === 200) return true;
    const onLimited = this.#limits.onLimited;
    if (verdict.status === 429 && onLimited !== undefined) throw onLimited(context, verdict.decision);
    throw new RateLimitException(JSON.parse(engine.body(verdict)) as ProblemDetails, verdict.decision);
  }
}

// Nest's DI metadata, applied as calls: no decorator syntax, no emitDecoratorMetadata needed.
Injectable()(SluiceGuard);
Inject(SluiceLimits)(SluiceGuard, undefined, 0);

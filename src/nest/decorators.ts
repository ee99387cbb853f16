/**
 * `@RateLimit(ruleOrSpec, options?)` and `@SkipRateLimit()`, on a controller or a handler (the
 * handler's wins). They are plain metadata decorators with Nest's (legacy,
 * `experimentalDecorators`) signature; without decorator syntax, call them as functions, e.g.
 * `RateLimit(spec)(Controller.prototype, "method", Object.getOwnPropertyDescriptor(...))`.
 */
import type { IncomingMessage } from "node:http";
import { SetMetadata } from "@nestjs/common";
import { ArgumentError } from "../errors.ts";
import { type RuleSpec, validateRule } from "../spec.ts";
import { checkRouteOptions, type RouteLimitOptions } from "./options.ts";

/** Metadata key of `@RateLimit`. */
export const RATE_LIMIT_METADATA = "sluice:rate-limit";
/** Metadata key of `@SkipRateLimit`. */
export const SKIP_RATE_LIMIT_METADATA = "sluice:skip-rate-limit";

/** What `@RateLimit` records: a rule of the module's service, or a spec with its state name. */
export type RouteLimit =
  | { readonly rule: string; readonly options: RouteLimitOptions<unknown> }
  | { readonly spec: RuleSpec; readonly name: string; readonly options: RouteLimitOptions<unknown> };

/** A decorator for a controller class or a handler method. */
export type ClassOrMethodDecorator = ClassDecorator & MethodDecorator;

type Target = object | ((...args: never[]) => unknown);

/** Stores `value` as Nest's `SetMetadata` does: on the class, or on the method's function. */
function define(
  key: string,
  value: unknown,
  target: Target,
  property?: string | symbol,
  descriptor?: PropertyDescriptor,
): void {
  const set = SetMetadata(key, value) as (t: Target, p?: string | symbol, d?: PropertyDescriptor) => unknown;
  set(target, property, descriptor);
}

function where(target: Target, property: string | symbol | undefined): string {
  if (property === undefined) return (target as { name: string }).name || "anonymous";
  const owner = typeof target === "function" ? target : (target as { constructor: { name: string } }).constructor;
  return `${owner.name || "anonymous"}.${String(property)}`;
}

/**
 * Limits a controller's routes or one handler. `limit` is the name of a rule of the module's
 * `service`, or a spec (one or an array) whose state is named `Controller.handler` (on a
 * class: `Controller`, one budget shared by its routes) unless `options.name` is given.
 *
 * @example @RateLimit({ algorithm: "sliding-log", limit: 5, windowMs: 60_000 }, { policyName: "login" })
 */
export function RateLimit<Req = IncomingMessage>(
  limit: string | RuleSpec,
  options: RouteLimitOptions<Req> = {},
): ClassOrMethodDecorator {
  checkRouteOptions(options);
  if (typeof limit === "string") {
    if (limit === "") throw new ArgumentError("@RateLimit: the rule name must not be empty");
  } else {
    validateRule(limit, "@RateLimit: "); // a bad spec fails when the class is defined, not on a request
  }
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    throw new ArgumentError(`@RateLimit: \`name\` must be a non-empty string (got ${JSON.stringify(options.name)})`);
  }
  const routeOptions = options as RouteLimitOptions<unknown>;
  const decorate = (target: Target, property?: string | symbol, descriptor?: PropertyDescriptor) => {
    const value: RouteLimit =
      typeof limit === "string"
        ? { rule: limit, options: routeOptions }
        : { spec: limit, name: options.name ?? where(target, property), options: routeOptions };
    define(RATE_LIMIT_METADATA, value, target, property, descriptor);
    return descriptor;
  };
  return decorate as ClassOrMethodDecorator;
}

/** Exempts a controller or a handler from every sluice limit; `@SkipRateLimit(false)` on a handler re-enables it. */
export function SkipRateLimit(skip = true): ClassOrMethodDecorator {
  const decorate = (target: Target, property?: string | symbol, descriptor?: PropertyDescriptor) => {
    define(SKIP_RATE_LIMIT_METADATA, skip, target, property, descriptor);
    return descriptor;
  };
  return decorate as ClassOrMethodDecorator;
}

/**
 * `@RateLimit(ruleOrSpec, options?)` and `@SkipRateLimit()`, on a controller or a handler (the
 * handler's wins). They are plain metadata decorators with Nest's (legacy,
 * `experimentalDecorators`) signature; without decorator syntax, call them as functions, e.g.
 * `RateLimit(spec)(Controller.prototype, "method", Object.getOwnPropertyDescriptor(...))`.
 */
import type { IncomingMessage } from "node:http";
import { ArgumentError } from "../core/errors.ts";
import { type LimitSpec, type RuleSpec, validateRule, validateSpec } from "../core/spec.ts";
import { checkRouteOptions, type RouteLimitOptions } from "./options.ts";
import { nestCommon } from "./peers.ts";

/** Metadata key of `@RateLimit`. */
export const RATE_LIMIT_METADATA = "sluice:rate-limit";
/** Metadata key of `@SkipRateLimit`. */
export const SKIP_RATE_LIMIT_METADATA = "sluice:skip-rate-limit";

/** What `@RateLimit` records: a rule of the module's service, or a spec with its state name. */
export type RouteLimit =
  | { readonly rule: string; readonly options: RouteLimitOptions<unknown> }
  | { readonly spec: RuleSpec; readonly name: string; readonly options: RouteLimitOptions<unknown> }
  | {
      /** Members of the module-wide composite replaced here, by member (policy) name. */
      readonly members: Readonly<Record<string, LimitSpec>>;
      readonly name: string;
      readonly options: RouteLimitOptions<unknown>;
    };

/** What `@SkipRateLimit("long")` records: members of the module-wide composite left out here. */
export interface SkippedMembers {
  readonly members: readonly string[];
}

/** True for `@RateLimit({ short: spec, … })`: an object of member overrides rather than a spec. */
function isMemberOverrides(limit: unknown): limit is Record<string, LimitSpec> {
  return typeof limit === "object" && limit !== null && !Array.isArray(limit) && !("algorithm" in limit);
}

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
  const set = nestCommon().SetMetadata(key, value) as (
    t: Target,
    p?: string | symbol,
    d?: PropertyDescriptor,
  ) => unknown;
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
  limit: string | RuleSpec | Readonly<Record<string, LimitSpec>>,
  options: RouteLimitOptions<Req> = {},
): ClassOrMethodDecorator {
  checkRouteOptions(options);
  const overrides = isMemberOverrides(limit) ? limit : undefined;
  if (overrides !== undefined) {
    const names = Object.keys(overrides);
    if (names.length === 0) throw new ArgumentError("@RateLimit: give at least one member to override");
    for (const member of names) validateSpec(overrides[member], `@RateLimit member ${JSON.stringify(member)}: `);
  } else if (typeof limit === "string") {
    if (limit === "") throw new ArgumentError("@RateLimit: the rule name must not be empty");
  } else {
    validateRule(limit as RuleSpec, "@RateLimit: "); // a bad spec fails when the class is defined, not on a request
  }
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    throw new ArgumentError(`@RateLimit: \`name\` must be a non-empty string (got ${JSON.stringify(options.name)})`);
  }
  const routeOptions = options as RouteLimitOptions<unknown>;
  const decorate = (target: Target, property?: string | symbol, descriptor?: PropertyDescriptor) => {
    const name = options.name ?? where(target, property);
    const value: RouteLimit =
      overrides !== undefined
        ? { members: overrides, name, options: routeOptions }
        : typeof limit === "string"
          ? { rule: limit, options: routeOptions }
          : { spec: limit as RuleSpec, name, options: routeOptions };
    define(RATE_LIMIT_METADATA, value, target, property, descriptor);
    return descriptor;
  };
  return decorate as ClassOrMethodDecorator;
}

/**
 * Exempts a controller or a handler from every sluice limit; `@SkipRateLimit(false)` on a
 * handler re-enables it. `@SkipRateLimit("long", …)` leaves out only those members (by policy
 * name) of the module-wide composite limit.
 */
export function SkipRateLimit(skip: boolean | string = true, ...more: string[]): ClassOrMethodDecorator {
  let value: boolean | SkippedMembers = skip === true || skip === false ? skip : true;
  if (typeof skip === "string") {
    const members = [skip, ...more];
    for (const member of members) {
      if (typeof member !== "string" || member === "") {
        throw new ArgumentError(
          `@SkipRateLimit: member names must be non-empty strings (got ${JSON.stringify(member)})`,
        );
      }
    }
    value = { members };
  } else if (typeof skip !== "boolean") {
    throw new ArgumentError(`@SkipRateLimit: expected a boolean or member names (got ${JSON.stringify(skip)})`);
  }
  const decorate = (target: Target, property?: string | symbol, descriptor?: PropertyDescriptor) => {
    define(SKIP_RATE_LIMIT_METADATA, value, target, property, descriptor);
    return descriptor;
  };
  return decorate as ClassOrMethodDecorator;
}

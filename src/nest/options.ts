/** The options of `SluiceModule.forRoot` and of `@RateLimit`, and their key checks. */
import type { IncomingMessage } from "node:http";
import type { ExecutionContext } from "@nestjs/common";
import type { Decision } from "../algorithms/decision.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError } from "../core/errors.ts";
import { checkOptionKeys } from "../http/check-options.ts";
import type { RateLimitOptions } from "../http/options.ts";
import { ENGINE_OPTION_KEYS } from "../http/options.ts";
import type { LoadShedOptions } from "../shed/options.ts";

/** Per-limit options: how a request is keyed, costed and reported (the shared middleware options). */
export type LimitOptions<Req = IncomingMessage> = Omit<
  RateLimitOptions<Req>,
  "spec" | "service" | "rule" | "store" | "clock"
>;

/** Options of `@RateLimit(limit, options)`. */
export interface RouteLimitOptions<Req = IncomingMessage> extends LimitOptions<Req> {
  /**
   * The state's name for a spec limit (default: `Controller.handler`, or `Controller` on a
   * class), so processes sharing a Redis store share the count and two routes never do.
   */
  name?: string;
}

/** Options of `SluiceModule.forRoot`. */
export interface SluiceModuleOptions<Req = IncomingMessage> extends RateLimitOptions<Req> {
  /** The state name of the module-wide `spec` (default `"default"`). */
  name?: string;
  /**
   * Registers `SluiceGuard` for every route (`APP_GUARD`), default `true`. With `false`, apply
   * it where wanted with `@UseGuards(SluiceGuard)`.
   */
  appGuard?: boolean;
  /**
   * The exception to throw for a limited request instead of the 429 `RateLimitException` (the
   * rate-limit headers and `Retry-After` are already set on the response).
   */
  onLimited?: (context: ExecutionContext, decision: Decision) => Error;
  /**
   * Sends @nestjs/throttler's headers instead of `headers`' layout: per member (throttler)
   * `X-RateLimit-Limit-<name>`, `X-RateLimit-Remaining-<name>`, `X-RateLimit-Reset-<name>`
   * (seconds left) and `Retry-After-<name>`, no suffix for the member named `default`.
   * Default `false`.
   */
  throttlerHeaders?: boolean;
  /**
   * Sheds load before any limit is checked (SPEC §16, `loadShed` of the other adapters):
   * `priority(req)` gets the platform's request; a shed request gets the 503 `RateLimitException`
   * (an `urn:sluice:problem:overloaded` body) with `Retry-After`. `SluiceLimits.loadShed` has its stats.
   */
  loadShed?: LoadShedOptions<Req>;
}

/** Where a limit comes from: the module (or `@RateLimit`) decides these, not per-limit options. */
const SOURCE_KEYS: readonly string[] = ["spec", "name", "service", "rule", "store", "clock"];
/** The shared middleware options a limit may carry: every engine option but its source. */
const LIMIT_KEYS = ENGINE_OPTION_KEYS.filter((key) => !SOURCE_KEYS.includes(key));
const ROUTE_KEYS = new Set([...LIMIT_KEYS, "name"]);
const MODULE_KEYS = new Set([
  ...LIMIT_KEYS,
  "spec",
  "service",
  "rule",
  "store",
  "clock",
  "name",
  "appGuard",
  "onLimited",
  "throttlerHeaders",
  "loadShed",
]);

function checkKeys(what: string, options: unknown, known: ReadonlySet<string>): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ArgumentError(`${what} must be an object (got ${describeValue(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (known.has(key)) continue;
    if (what === "SluiceModule options")
      checkOptionKeys({ [key]: true }, ["appGuard", "onLimited", "throttlerHeaders"]); // its hints
    throw new ArgumentError(`${what}: unknown option \`${key}\` (known: ${[...known].join(", ")})`);
  }
}

/** Refuses a non-object or an unknown key in `SluiceModule.forRoot` options. */
export function checkModuleOptions(options: unknown): asserts options is SluiceModuleOptions<unknown> {
  checkKeys("SluiceModule options", options, MODULE_KEYS);
}

/** Refuses a non-object or an unknown key in `@RateLimit` options. */
export function checkRouteOptions(options: unknown): asserts options is RouteLimitOptions<unknown> {
  checkKeys("@RateLimit options", options, ROUTE_KEYS);
}

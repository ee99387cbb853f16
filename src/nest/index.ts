/**
 * `sluice/nest`: rate limiting for NestJS (10, 11) on the shared HTTP engine: `SluiceModule`,
 * `SluiceGuard`, `@RateLimit(ruleOrSpec, options?)` and `@SkipRateLimit()`, like
 * @nestjs/throttler's `@Throttle` / `@SkipThrottle`. Needs `reflect-metadata` (as Nest does).
 *
 * @example
 * \@Module({ imports: [SluiceModule.forRoot({ spec: { algorithm: "gcra", limit: 100, periodMs: 60_000 } })] })
 */
export {
  type ClassOrMethodDecorator,
  RATE_LIMIT_METADATA,
  RateLimit,
  type RouteLimit,
  SKIP_RATE_LIMIT_METADATA,
  type SkippedMembers,
  SkipRateLimit,
} from "./decorators.ts";
export { RateLimitException, RateLimitExceptionFilter } from "./exception.ts";
export { SluiceGuard } from "./guard.ts";
export { nestReader, SluiceLimits } from "./limits.ts";
export { SLUICE_OPTIONS, SluiceModule, type SluiceModuleAsyncOptions } from "./module.ts";
export type { LimitOptions, RouteLimitOptions, SluiceModuleOptions } from "./options.ts";

/**
 * Builds every controller route's limit at application bootstrap, so a bad `@RateLimit` (a
 * rule `service` does not have, two different specs under one name) fails startup rather
 * than answering 500 to requests.
 */
import type { DiscoveryService, MetadataScanner } from "@nestjs/core";
import { RATE_LIMIT_METADATA, type RouteLimit, SKIP_RATE_LIMIT_METADATA, type SkippedMembers } from "./decorators.ts";
import type { SluiceLimits } from "./limits.ts";
import { nestCore } from "./peers.ts";

type Handler = (...args: never[]) => unknown;

/** Builds the engine of every method of every controller `discovery` knows (throws on the first bad one). */
export function checkRoutes(limits: SluiceLimits, discovery: DiscoveryService, scanner: MetadataScanner): void {
  const reflector = new (nestCore().Reflector)();
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as Handler | null;
    const prototype = controller?.prototype as Record<string, unknown> | undefined;
    if (controller === null || prototype === undefined) continue;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const targets = [prototype[name] as Handler, controller];
      const skip = reflector.getAllAndOverride<boolean | SkippedMembers | undefined>(SKIP_RATE_LIMIT_METADATA, targets);
      if (skip === true) continue;
      limits.engine(
        reflector.getAllAndOverride<RouteLimit | undefined>(RATE_LIMIT_METADATA, targets),
        typeof skip === "object" ? skip : undefined,
      );
    }
  }
}

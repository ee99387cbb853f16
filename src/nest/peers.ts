/**
 * `@nestjs/common` and `@nestjs/core`, loaded on first use: `import "sluice/nest"` works where
 * Nest is not installed, and using it there says what to install.
 */
import { optionalPeer, requirePeer } from "../optional-peer.ts";

type Common = typeof import("@nestjs/common");
type Core = typeof import("@nestjs/core");

/** `@nestjs/common`, or `undefined` when it is not installed (for metadata applied at load). */
export const nestCommonIfPresent: Common | undefined = optionalPeer<Common>("@nestjs/common");

/** `@nestjs/common` (throws naming the package when it is missing). */
export function nestCommon(): Common {
  return nestCommonIfPresent ?? requirePeer<Common>("@nestjs/common", "sluice/nest");
}

/** `@nestjs/core` (throws naming the package when it is missing). */
export function nestCore(): Core {
  return requirePeer<Core>("@nestjs/core", "sluice/nest");
}

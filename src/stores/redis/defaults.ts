/**
 * RedisStore's defaults, in a module of their own so `sluice serve` can state them without
 * loading the store (it loads `sluice/redis` only when `--redis` is given).
 */

/** The key prefix when none is given. */
export const DEFAULT_PREFIX = "sluice:";

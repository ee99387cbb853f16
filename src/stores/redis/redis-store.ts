/**
 * The Redis / Valkey store: each check is decided by the Lua twin of its algorithm(s), inside
 * Redis, atomically, making exactly the decisions the memory store makes for the same events.
 * With an injected clock `now` travels as a script argument; without one the script reads the
 * server's `TIME`, so application servers with skewed clocks still agree.
 */

import { ArgumentError } from "../../errors.ts";
import type { BoundRule, RuleBinding, Store } from "../../store.ts";
import { Batcher } from "./batcher.ts";
import { RedisBoundRule, type StoreParts } from "./bound-rule.ts";
import { Breaker, type BreakerOptions } from "./breaker.ts";
import { adaptClient, type RedisClientLike } from "./client.ts";
import { checkOnError, type OnError } from "./failure.ts";
import { checkScript } from "./script.ts";

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis `Redis`/`Cluster` or a node-redis client/cluster, already configured. */
  client: RedisClientLike;
  /** Prefix of every key (default `"sluice:"`); keeps applications apart. No `{` or `}`. */
  prefix?: string;
  /** Longest a check may wait for Redis, in ms (default 1000); then `onError` answers. */
  timeoutMs?: number;
  /** What a check answers when Redis fails or times out (default `"deny"`). */
  onError?: OnError;
  /** Circuit breaker settings, or `false` to always try Redis (default: open after 5 failures, probe after 1 s). */
  breaker?: BreakerOptions | false;
  /**
   * Extra lifetime added to every key's expiry, in ms (default 0). Expiring later never changes
   * a decision; it only matters with an injected clock that runs slower than real time (a
   * `ManualClock` in tests) or app clocks skewed against each other, where state could
   * otherwise expire in Redis before the clock says it is fresh.
   */
  expiryGraceMs?: number;
}

const DEFAULT_TIMEOUT_MS = 1000;

function positive(name: string, value: unknown, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new ArgumentError(
      `\`${name}\` must be a ${allowZero ? "non-negative" : "positive"} number of ms (got ${String(value)})`,
    );
  }
  return value;
}

/**
 * Keeps rate-limit state in Redis or Valkey, standalone or Cluster, shared by every process
 * that uses the same prefix and rule names.
 *
 * @example
 * const store = new RedisStore({ client: new Redis(), onError: "deny" });
 * const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store, name: "api" });
 * const d = await limiter.tryAcquire(userId);
 */
export class RedisStore implements Store {
  /** Checks return promises. */
  readonly synchronous = false;
  /** The key prefix in use. */
  readonly prefix: string;
  /** The bound on every check, in ms. */
  readonly timeoutMs: number;
  readonly #parts: StoreParts;

  constructor(options: RedisStoreOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ArgumentError(`RedisStore options must be an object with a \`client\` (got ${String(options)})`);
    }
    const commands = adaptClient(options.client);
    const prefix = options.prefix ?? "sluice:";
    if (typeof prefix !== "string" || /[{}]/.test(prefix)) {
      throw new ArgumentError(`\`prefix\` must be a string without "{" or "}" (got ${JSON.stringify(prefix)})`);
    }
    this.prefix = prefix;
    this.timeoutMs = positive("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS);
    const grace = positive("expiryGraceMs", options.expiryGraceMs, 0, true);
    const breaker = new Breaker(options.breaker);
    this.#parts = {
      prefix,
      timeoutMs: this.timeoutMs,
      commands,
      breaker,
      batcher: new Batcher(commands, checkScript(), breaker, this.timeoutMs, Math.ceil(grace)),
      onError: checkOnError(options.onError ?? "deny"),
    };
  }

  /** True while the circuit breaker keeps checks away from a failing Redis. */
  get circuitOpen(): boolean {
    return this.#parts.breaker.open;
  }

  /** Binds a rule: its members' key layout and script parameters are computed once, here. */
  bind(rule: RuleBinding): BoundRule {
    return new RedisBoundRule(this.#parts, rule);
  }
}

/**
 * The Redis / Valkey store: each check is decided by the Lua twin of its algorithm(s), inside
 * Redis, atomically, making exactly the decisions the memory store makes for the same events.
 * With an injected clock `now` travels as a script argument; without one the script reads the
 * server's `TIME`, so application servers with skewed clocks still agree.
 */

import type { Decision } from "../../decision.ts";
import { ArgumentError, StoreError } from "../../errors.ts";
import type { AlgorithmSpec } from "../../spec.ts";
import type { BoundRule, RuleBinding, Store } from "../../store.ts";
import { Batcher } from "./batcher.ts";
import { Breaker, type BreakerOptions } from "./breaker.ts";
import { adaptClient, type RedisClientLike, type RedisCommands } from "./client.ts";
import { checkOnError, failurePolicy, type OnError } from "./failure.ts";
import { ALGORITHM_CODES, hashTag, ruleDigest, slotOf } from "./keys.ts";
import { toDecision } from "./reply.ts";
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

/** The two script parameters of a member (see the `params` of each Lua twin). */
function memberParams(spec: AlgorithmSpec): [string, string] {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return [String(spec.limit), String(spec.windowMs)];
    case "token-bucket":
      return [String(spec.capacity), String(spec.refillPerSecond)];
    case "gcra":
      // The same double the TS step computes, passed exactly (shortest round-trip text).
      return [String(spec.periodMs / spec.limit), String(spec.burst ?? spec.limit)];
    case "leaky-bucket":
      return [String(1000 / spec.leakPerSecond), String(spec.capacity)];
  }
}

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
  readonly #commands: RedisCommands;
  readonly #onError: OnError;
  readonly #breaker: Breaker;
  readonly #batcher: Batcher;

  constructor(options: RedisStoreOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ArgumentError(`RedisStore options must be an object with a \`client\` (got ${String(options)})`);
    }
    this.#commands = adaptClient(options.client);
    const prefix = options.prefix ?? "sluice:";
    if (typeof prefix !== "string" || /[{}]/.test(prefix)) {
      throw new ArgumentError(`\`prefix\` must be a string without "{" or "}" (got ${JSON.stringify(prefix)})`);
    }
    this.prefix = prefix;
    this.timeoutMs = positive("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS);
    const grace = positive("expiryGraceMs", options.expiryGraceMs, 0, true);
    this.#onError = checkOnError(options.onError ?? "deny");
    this.#breaker = new Breaker(options.breaker);
    this.#batcher = new Batcher(this.#commands, checkScript(), this.#breaker, this.timeoutMs, Math.ceil(grace));
  }

  /** True while the circuit breaker keeps checks away from a failing Redis. */
  get circuitOpen(): boolean {
    return this.#breaker.open;
  }

  /** Binds a rule: its members' key layout and script parameters are computed once, here. */
  bind(rule: RuleBinding): BoundRule {
    const digest = ruleDigest(rule.id);
    const members = rule.algorithms.map((a, i) => ({
      base: `${digest}:${i}${ALGORITHM_CODES[a.kind]}:`,
      args: [ALGORITHM_CODES[a.kind], ...memberParams(a.spec)],
    }));
    const memberArgs = members.flatMap((m) => m.args);
    const count = String(members.length);
    const policy = failurePolicy(this.#onError, rule);
    const keysOf = (key: string) => {
      const tag = hashTag(digest, key);
      const head = `${this.prefix}{${tag}}`;
      return { tag, keys: members.map((m) => head + m.base + key) };
    };

    const check = async (key: string, cost: number, now: number | undefined, peek: boolean): Promise<Decision> => {
      const { tag, keys } = keysOf(key);
      if (!this.#breaker.allow()) {
        return policy.decide(key, cost, peek, new StoreError("Redis circuit breaker is open (recent checks failed)"));
      }
      const args = [count, now === undefined ? "" : String(now), String(cost), peek ? "1" : "0", ...memberArgs];
      let fields: readonly string[];
      try {
        fields = await this.#batcher.submit(this.#commands.cluster ? slotOf(tag) : 0, keys, args, members.length);
      } catch (error) {
        return policy.decide(key, cost, peek, error as StoreError);
      }
      return toDecision(fields);
    };

    const reset = async (key: string): Promise<void> => {
      const { keys } = keysOf(key);
      await policy.forget(key);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new StoreError(`Redis did not answer within timeoutMs (${this.timeoutMs} ms)`, { timeout: true })),
          this.timeoutMs,
        );
      });
      try {
        await Promise.race([this.#commands.del(keys), timeout]);
      } catch (error) {
        throw error instanceof StoreError
          ? error
          : new StoreError(`Redis reset failed: ${error instanceof Error ? error.message : String(error)}`, {
              cause: error,
            });
      } finally {
        clearTimeout(timer);
      }
    };

    return { check, reset, release: () => {} };
  }
}

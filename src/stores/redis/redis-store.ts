/**
 * The Redis / Valkey store: each check is decided by the Lua twin of its algorithm(s), inside
 * Redis, atomically, making exactly the decisions the memory store makes for the same events.
 * With an injected clock `now` travels as a script argument; without one the script reads the
 * server's `TIME`, so application servers with skewed clocks still agree.
 *
 * Around the decision: checks are batched per slot (batcher.ts), bounded by `timeoutMs` and a
 * deadline Redis itself enforces (script.ts), guarded by one circuit breaker per node
 * (nodes.ts), answered by `onError` when Redis cannot (failure.ts), and repeats of a denial
 * are answered locally until its retryAfterMs (deny-cache.ts, invalidation.ts).
 */

import { ArgumentError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { warn } from "../../core/warn.ts";
import { type BreakerOptions, checkBreaker } from "../remote/breaker.ts";
import { checkOnError, DEFAULT_POLICY, describePolicy, type OnError } from "../remote/failure-policy.ts";
import { firstFailureWarning } from "../remote/failure-warning.ts";
import { checkTimeoutMs } from "../remote/with-timeout.ts";
import { Batcher } from "./batcher.ts";
import { RedisBoundRule, type StoreParts } from "./bound-rule.ts";
import { CheckCaller } from "./check-call.ts";
import { adaptClient, type RedisClientLike } from "./client.ts";
import { connectClient, type RedisConnectOptions, splitConnectOptions } from "./connect.ts";
import { DEFAULT_PREFIX } from "./defaults.ts";
import { checkDenyCache, DenyCache, type DenyCacheOptions } from "./deny-cache.ts";
import { openRedisFleetQueue } from "./fleet-queue.ts";
import { Invalidation } from "./invalidation.ts";
import { Nodes } from "./nodes.ts";
import { checkScript } from "./script.ts";

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis `Redis`/`Cluster`, a node-redis client/cluster or an `@upstash/redis` `Redis`, already configured. */
  client: RedisClientLike;
  /** Prefix of every key (default `"sluice:"`); keeps applications apart. No `{` or `}`. */
  prefix?: string;
  /** Longest a check may wait for Redis, in ms (default 1000); then `onError` answers. */
  timeoutMs?: number;
  /** What a check answers when Redis fails or times out (default `"deny"`). */
  onError?: OnError;
  /**
   * Circuit breaker settings, one breaker per node (per Cluster master), or `false` to always
   * try Redis (default: open after 5 failures, probe after 1 s).
   */
  breaker?: BreakerOptions | false;
  /**
   * Answer repeats of a denial locally until its `retryAfterMs` (default on; `false` turns it
   * off; `{ maxEntries }` bounds it, default 10,000). Resets and rule changes reach every
   * node's cache through pub/sub on `<prefix>invalidate`. Off (and refused if asked for) with
   * `@upstash/redis`, whose REST calls cannot hold a subscription.
   */
  denyCache?: boolean | DenyCacheOptions;
  /**
   * Extra lifetime added to every key's expiry, in ms (default 0). Expiring later never changes
   * a decision; it only matters with an injected clock that runs slower than real time (a
   * `ManualClock` in tests) or app clocks skewed against each other, where state could
   * otherwise expire in Redis before the clock says it is fresh.
   */
  expiryGraceMs?: number;
}

const OPTION_KEYS = new Set(["client", "prefix", "timeoutMs", "onError", "breaker", "denyCache", "expiryGraceMs"]);

/** Clients already warned about (once per client, however many stores share it). */
const warned = new WeakSet<object>();

/** Warning code for client options under which a timed-out command could be sent late. */
export const LATE_OPTIONS_WARNING = "SLUICE_REDIS_CLIENT_OPTIONS";

/** `expiryGraceMs`: a non-negative number of ms, 0 when unset. */
function graceMs(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new ArgumentError(`\`expiryGraceMs\` must be a non-negative number of ms (got ${String(value)})`);
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
  /** Decides `penalty`, `block` and `get` (the Lua twin of decideRule's calls). */
  readonly flexibleCalls = true;
  /** Checks without an injected clock are decided on Redis TIME, which stamps leases' receipts. */
  readonly stampsLeases = true;
  /** The key prefix in use. */
  readonly prefix: string;
  /** The bound on every check, in ms. */
  readonly timeoutMs: number;
  readonly #parts: StoreParts;
  /** Closes the client when the store built it ({@link RedisStore.connect}). */
  #closeClient: (() => Promise<void>) | undefined;

  /**
   * Connects to Redis with a client sluice builds and configures (ioredis: standalone from a
   * URL, `{ cluster: [...] }` or `{ sentinels: [...], name }`), waits until it is ready, and
   * returns a store that owns it (`close()` closes both). Needs `ioredis` installed.
   *
   * @example
   * const store = await RedisStore.connect("redis://127.0.0.1:6379");
   * const cluster = await RedisStore.connect({ cluster: ["10.0.0.1:6379", "10.0.0.2:6379"], prefix: "api:" });
   */
  static async connect(target: string | RedisConnectOptions): Promise<RedisStore> {
    const { connect, store: options } = splitConnectOptions(target);
    // Refuse bad store options before opening any connection.
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) {
        throw new ArgumentError(
          `unknown RedisStore.connect option \`${key}\` (expected url, cluster, sentinels, name, clientOptions, connectTimeoutMs, ${[
            ...OPTION_KEYS,
          ]
            .filter((k) => k !== "client")
            .join(", ")})`,
        );
      }
    }
    const connected = await connectClient(connect);
    try {
      const store = new RedisStore({ ...options, client: connected.client as RedisClientLike });
      store.#closeClient = connected.close;
      return store;
    } catch (error) {
      await connected.close();
      throw error;
    }
  }

  constructor(options: RedisStoreOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ArgumentError(`RedisStore options must be an object with a \`client\` (got ${String(options)})`);
    }
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) {
        throw new ArgumentError(`unknown RedisStore option \`${key}\` (expected ${[...OPTION_KEYS].join(", ")})`);
      }
    }
    const commands = adaptClient(options.client);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    if (typeof prefix !== "string" || /[{}]/.test(prefix)) {
      throw new ArgumentError(`\`prefix\` must be a string without "{" or "}" (got ${JSON.stringify(prefix)})`);
    }
    this.prefix = prefix;
    this.timeoutMs = checkTimeoutMs(options.timeoutMs);
    const grace = graceMs(options.expiryGraceMs);
    let entries = checkDenyCache(options.denyCache);
    if (commands.subscribes === false && entries > 0) {
      // Asked for explicitly: say it cannot be had rather than run without it unnoticed.
      if (options.denyCache !== undefined) {
        throw new ArgumentError(
          `\`denyCache\` needs a client that can subscribe to pub/sub; ${commands.noSubscription ?? "this client cannot"}: leave \`denyCache\` unset or false`,
        );
      }
      entries = 0;
    }
    const denyCache = entries > 0 ? new DenyCache(entries) : undefined;
    const onError = checkOnError(options.onError ?? DEFAULT_POLICY);
    this.#parts = {
      prefix,
      timeoutMs: this.timeoutMs,
      commands,
      nodes: new Nodes(commands, checkBreaker(options.breaker)),
      batcher: new Batcher(new CheckCaller(commands, checkScript()), this.timeoutMs, Math.ceil(grace)),
      onError,
      onFailure: firstFailureWarning(`RedisStore (prefix ${JSON.stringify(prefix)})`, describePolicy(onError)),
      denyCache,
      invalidation: new Invalidation(commands, prefix, denyCache, this.timeoutMs),
    };
    const late = warned.has(options.client) ? [] : commands.lateOptions();
    if (late.length > 0) {
      warned.add(options.client);
      warn(
        `RedisStore: the client is configured so that a command can be sent or retried after sluice has answered it by timeout (${late.join(
          ", ",
        )}). sluice's deadline guard makes Redis refuse such late calls, but they still cost round trips, and TRYAGAIN retried inside the client cannot be split by sluice. See docs/redis.md ("Bringing your own client") for the settings to use, or let \`RedisStore.connect\` build the client.`,
        LATE_OPTIONS_WARNING,
      );
    }
  }

  /** True while the circuit breaker of any node keeps checks away from it. */
  get circuitOpen(): boolean {
    return this.#parts.nodes.anyOpen;
  }

  /** Addresses (`host:port`, "" on standalone) of the nodes whose circuit breaker is open now. */
  openNodes(): string[] {
    return this.#parts.nodes.openNodes();
  }

  /** Denials held by the deny cache now (0 when it is off or not yet live). */
  get cachedDenials(): number {
    return this.#parts.denyCache?.size ?? 0;
  }

  /** Checks the deny cache answered without asking Redis, since construction. */
  get denyCacheHits(): number {
    return this.#parts.denyCache?.hits ?? 0;
  }

  /** Ends the deny cache's subscription; the client stays yours to close, unless {@link RedisStore.connect} made it. */
  async close(): Promise<void> {
    await this.#parts.invalidation.close();
    const closeClient = this.#closeClient;
    this.#closeClient = undefined;
    await closeClient?.();
  }

  /** @internal Opens a throttle's fleet queue here (src/stores/redis/fleet-queue.ts). */
  openFleetQueue(config: FleetQueueConfig): Promise<FleetQueue> {
    return openRedisFleetQueue(this.#parts, config);
  }

  /** Binds a rule: its members' key layout and script parameters are computed once, here. */
  bind(rule: RuleBinding): BoundRule {
    return new RedisBoundRule(this.#parts, rule);
  }
}

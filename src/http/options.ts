/** The options every sluice HTTP adapter shares (each adapter adds its own `onLimited`). */

import type { Decision } from "../algorithms/decision.ts";
import type { BanPolicy } from "../core/ban.ts";
import type { Clock } from "../core/clock.ts";
import type { RuleSpec } from "../core/spec.ts";
import type { Store } from "../core/store.ts";
import type { RateLimiterService } from "../service.ts";
import type { ProxyHeader, TrustProxy } from "./client-key.ts";
import type { HeaderFormat } from "./headers.ts";

/** What `onDecision` gets besides the request, the decision and the rule name. */
export interface DecisionInfo {
  /** The client key the request was counted under (`sha256:…` for keys over 200 characters). */
  key: string;
  /** Units it cost. */
  cost: number;
  /** The service tier used, if any. */
  tier: string | undefined;
  /** True when the middleware only reports (the request passes whatever the decision). */
  dryRun: boolean;
  /** The HTTP status the middleware answered: 200 (passed on), 403 (banned), 429 or 503. */
  status: 200 | 403 | 429 | 503;
}

/** A value or a promise of it: hooks may be synchronous (fastest) or async. */
export type MaybePromise<T> = T | Promise<T>;

/** Which requests keep their units: all (default), only failed ones, or only successful ones. */
export type CountMode = "all" | "failed" | "succeeded";

/**
 * When `count` decides whether a request succeeded: `"response"` (default) when the response
 * was fully sent, so a client that left first did not succeed; `"handler"` when the handler
 * answered, whether or not the client was still there (work with side effects counts).
 */
export type CountOn = "response" | "handler";

/**
 * What to do when `tier(req)` names a tier the service rule does not have: `"reject"` (default)
 * answers 400 problem+json naming the tier; `"base"` applies the rule's own spec; `"throw"`
 * passes the `ArgumentError` to the framework's error handling.
 */
export type UnknownTierPolicy = "reject" | "base" | "throw";

/**
 * Options of `rateLimit` for request type `Req` (Node `IncomingMessage`, Express `Request`, …)
 * and the adapter's response type `Res` (only `requestWasSuccessful` sees it).
 */
export interface RateLimitOptions<Req, Res = unknown> {
  /**
   * The rule: one spec, or an array of specs that must all pass. Give this or `service` + `rule`.
   * A function of the request (sync or async) picks the rule per request: each distinct rule
   * shape it returns keeps its own state (named after `name` and the shape); an invalid result
   * is answered 503 (a failure, see `decision.failure.error`), never a crash.
   */
  spec?: RuleSpec | ((request: Req) => MaybePromise<RuleSpec>);
  /**
   * The state's namespace in the store (with `spec`). Without it the identity comes from the
   * spec, so two middlewares with equal specs on one store share counters: name each one.
   * Also the default policy name in headers.
   */
  name?: string;
  /** Escalation (with `spec`): `after` denials within `withinMs` ban the key for `forMs`; banned keys get 403. */
  ban?: BanPolicy;
  /** A service whose named `rule` is applied (tiers come from `tier`). */
  service?: RateLimiterService<Store>;
  /** The service rule's name (with `service`). */
  rule?: string;
  /** Where state lives with `spec` (default: a new MemoryStore). */
  store?: Store;
  /** Time source with `spec` (default: systemClock, or Redis time on a RedisStore). */
  clock?: Clock;
  /**
   * The client key (default: the client address, see `trustProxy`). `address` is that default
   * key. Returning `undefined` keys the request by its address in a namespace of its own, so no
   * key a client can choose (a header, a token) ever reaches an address's counter.
   */
  key?: (request: Req, address: string | undefined) => MaybePromise<string | undefined>;
  /** Units this request costs (default 1): a safe integer ≥ 1. */
  cost?: (request: Req) => MaybePromise<number>;
  /** The service tier for this request (with `service`); undefined uses the rule's own spec. */
  tier?: (request: Req) => MaybePromise<string | undefined>;
  /** A tier the rule does not have: see {@link UnknownTierPolicy} (default `"reject"`: 400). */
  onUnknownTier?: UnknownTierPolicy;
  /** Which requests keep their units (default `"all"`); the others are refunded after the response. */
  count?: CountMode;
  /** When `count` judges a request: the response sent (default `"response"`) or the handler's answer (`"handler"`). */
  countOn?: CountOn;
  /** Whether a finished request succeeded, for `count` (default: status < 400). */
  requestWasSuccessful?: (request: Req, response: Res) => boolean;
  /** Client addresses / CIDRs (IPv4, IPv6) never counted nor limited. */
  allowList?: readonly string[];
  /** Client addresses / CIDRs answered 403 problem+json without being counted. */
  denyList?: readonly string[];
  /** `false` (default): the socket address only; a number of proxy hops; or proxies' addresses/CIDRs. */
  trustProxy?: TrustProxy;
  /** Which header trusted proxies append to (default `"x-forwarded-for"`; or RFC 7239 `"forwarded"`). */
  proxyHeader?: ProxyHeader;
  /** Prefix length IPv6 clients are grouped by (default 56; 128 keys single addresses). */
  ipv6Subnet?: number;
  /** Header layout (default `"draft-11"`), or `false` for none (`Retry-After` is still sent on 429). */
  headers?: HeaderFormat | false;
  /** Policy name(s) in headers and problem bodies (default: `name`, the rule name, or `"default"`). */
  policyName?: string | readonly string[];
  /** Only report: every request passes; `Sluice-Dry-Run` and `onDecision` tell what would have happened. */
  dryRun?: boolean;
  /**
   * Leaky-bucket rules admit requests with a `delayMs`. By default (`true`) the middleware waits
   * that long, on the limiter's clock, before passing the request on: that is what turns bursts
   * into a constant outflow. `false` passes at once and leaves `delayMs` to `onDecision`.
   */
  honorDelay?: boolean;
  /** Requests for which this returns true are neither counted nor limited. */
  skip?: (request: Req) => MaybePromise<boolean>;
  /** Called for every decision (after skip), e.g. to log or count; `rule` is the rule / policy name. */
  onDecision?: (request: Req, decision: Decision, rule: string, info: DecisionInfo) => void;
}

/** Every option the engine reads; adapters add theirs (e.g. `onLimited`). */
export const ENGINE_OPTION_KEYS = [
  "spec",
  "name",
  "ban",
  "service",
  "rule",
  "store",
  "clock",
  "key",
  "cost",
  "tier",
  "onUnknownTier",
  "count",
  "countOn",
  "requestWasSuccessful",
  "allowList",
  "denyList",
  "trustProxy",
  "proxyHeader",
  "ipv6Subnet",
  "headers",
  "policyName",
  "dryRun",
  "honorDelay",
  "skip",
  "onDecision",
] as const satisfies readonly (keyof RateLimitOptions<unknown>)[];

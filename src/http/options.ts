/** The options every sluice HTTP adapter shares (each adapter adds its own `onLimited`). */

import type { Decision } from "../algorithms/decision.ts";
import type { Clock } from "../clock.ts";
import type { RateLimiterService } from "../service.ts";
import type { RuleSpec } from "../spec.ts";
import type { Store } from "../store.ts";
import type { ProxyHeader, TrustProxy } from "./client-key.ts";
import type { HeaderFormat } from "./headers.ts";

/** What `onDecision` gets besides the request, the decision and the rule name. */
export interface DecisionInfo {
  /** The key the request was counted under. */
  key: string;
  /** Units it cost. */
  cost: number;
  /** The service tier used, if any. */
  tier: string | undefined;
  /** True when the middleware only reports (the request passes whatever the decision). */
  dryRun: boolean;
  /** The HTTP status the middleware answered: 200 (passed on), 429 or 503. */
  status: 200 | 429 | 503;
}

/** A value or a promise of it: hooks may be synchronous (fastest) or async. */
export type MaybePromise<T> = T | Promise<T>;

/** Options of `rateLimit` for request type `Req` (Node `IncomingMessage`, Express `Request`, …). */
export interface RateLimitOptions<Req> {
  /** The rule: one spec, or an array of specs that must all pass. Give this or `service` + `rule`. */
  spec?: RuleSpec;
  /** A service whose named `rule` is applied (tiers come from `tier`). */
  service?: RateLimiterService<Store>;
  /** The service rule's name (with `service`). */
  rule?: string;
  /** Where state lives with `spec` (default: a new MemoryStore). */
  store?: Store;
  /** Time source with `spec` (default: systemClock, or Redis time on a RedisStore). */
  clock?: Clock;
  /** The client key (default: the client address, see `trustProxy`). `address` is that default key. */
  key?: (request: Req, address: string | undefined) => MaybePromise<string>;
  /** Units this request costs (default 1): a safe integer ≥ 1. */
  cost?: (request: Req) => MaybePromise<number>;
  /** The service tier for this request (with `service`); undefined uses the rule's own spec. */
  tier?: (request: Req) => MaybePromise<string | undefined>;
  /** `false` (default): the socket address only; a number of proxy hops; or proxies' addresses/CIDRs. */
  trustProxy?: TrustProxy;
  /** Which header trusted proxies append to (default `"x-forwarded-for"`; or RFC 7239 `"forwarded"`). */
  proxyHeader?: ProxyHeader;
  /** Prefix length IPv6 clients are grouped by (default 56; 128 keys single addresses). */
  ipv6Subnet?: number;
  /** Header layout (default `"draft-11"`), or `false` for none (`Retry-After` is still sent on 429). */
  headers?: HeaderFormat | false;
  /** Policy name(s) in headers and problem bodies (default: the rule name, or `"default"`). */
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

/**
 * The framework-neutral middleware: options → limiter; request → key, cost, tier → Decision →
 * Verdict (status + what to write). Adapters only read the socket address and headers and
 * write the verdict. A check on the in-process store stays synchronous end to end (no
 * promise, no microtask) unless a hook is async; on Redis it is one awaited round trip.
 */

import type { Decision } from "../algorithms/decision.ts";
import { type Clock, sleep, systemClock } from "../clock.ts";
import { ArgumentError, ConfigError, UnknownRuleError } from "../errors.ts";
import { createLimiter, type Limiter } from "../limiter.ts";
import type { RateLimiterService, RuleInfo } from "../service.ts";
import { describeValue } from "../spec.ts";
import type { Store } from "../store.ts";
import {
  addressKey,
  boundKey,
  forwardedFor,
  type ProxyHeader,
  parseSubnet,
  parseTrust,
  resolveClient,
  type Trust,
} from "./client-key.ts";
import {
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type PolicySet,
  retryAfterSeconds,
  type SetHeader,
  writeRateLimitHeaders,
} from "./headers.ts";
import type { DecisionInfo, MaybePromise, RateLimitOptions } from "./options.ts";
import { policiesFor } from "./policy.ts";
import { quotaExceeded, storeUnavailable } from "./problem.ts";

const KEY_CACHE_SIZE = 4096;

/** What the middleware does with a request. */
export interface Verdict {
  /** 200: pass it on (headers added); 429: limited; 503: the store failed under "deny". */
  readonly status: 200 | 429 | 503;
  readonly decision: Decision;
  readonly policies: PolicySet;
}

/** How an adapter reads a request: the socket's address and a (lower-case) header. */
export interface RequestReader<Req> {
  address(request: Req): string | undefined;
  header(request: Req, name: string): string | undefined;
}

/** True when `value` is a promise (or any thenable). */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Applies `fn` to a value or a promise of it, staying synchronous for plain values. */
function then<T, U>(value: MaybePromise<T>, fn: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(fn) : fn(value);
}

/** Reports each kind of misconfiguration once per middleware, as a process warning. */
function warner(): (code: string, message: string) => void {
  const seen = new Set<string>();
  return (code, message) => {
    if (seen.has(code)) return;
    seen.add(code);
    const proc = (globalThis as { process?: { emitWarning?: (m: string, o: object) => void } }).process;
    if (typeof proc?.emitWarning === "function") proc.emitWarning(message, { type: "SluiceWarning", code });
    else console.warn(`${code}: ${message}`);
  };
}

function checkFunction(options: object, name: string): void {
  const value = (options as Record<string, unknown>)[name];
  if (value !== undefined && typeof value !== "function") {
    throw new ConfigError(name, `\`${name}\` must be a function (got ${describeValue(value)})`, value);
  }
}

/** The shared middleware logic; one per `rateLimit(...)` call. */
export class Engine<Req> {
  readonly #options: RateLimitOptions<Req>;
  readonly #reader: RequestReader<Req>;
  readonly #trust: Trust;
  readonly #proxyHeader: ProxyHeader;
  readonly #subnet: number;
  readonly #limiter: Limiter | undefined;
  readonly #service: RateLimiterService<Store> | undefined;
  readonly #rule: string;
  readonly #policies: PolicySet | undefined;
  readonly #servicePolicies = new WeakMap<RuleInfo, Map<string, PolicySet>>();
  readonly #clock: Clock;
  readonly #warn = warner();
  /** Socket address → key, for `trustProxy: false` (the key depends on the address alone). */
  readonly #keyCache = new Map<string, string>();
  /** Header layout, or undefined for none. */
  readonly format: HeaderFormat | undefined;
  /** Whether the middleware only reports. */
  readonly dryRun: boolean;
  readonly #honorDelay: boolean;

  constructor(options: RateLimitOptions<Req>, reader: RequestReader<Req>) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("options", `rateLimit options must be an object (got ${describeValue(options)})`, options);
    }
    this.#options = options;
    this.#reader = reader;
    for (const name of ["key", "cost", "tier", "skip", "onDecision"]) checkFunction(options, name);
    this.#trust = parseTrust(options.trustProxy);
    const proxyHeader = options.proxyHeader ?? "x-forwarded-for";
    if (proxyHeader !== "x-forwarded-for" && proxyHeader !== "forwarded") {
      throw new ConfigError(
        "proxyHeader",
        `\`proxyHeader\` must be "x-forwarded-for" or "forwarded" (got ${describeValue(proxyHeader)})`,
        proxyHeader,
      );
    }
    this.#proxyHeader = proxyHeader;
    this.#subnet = parseSubnet(options.ipv6Subnet);
    const headers = options.headers ?? "draft-11";
    if (headers !== false && !HEADER_FORMATS.includes(headers)) {
      throw new ConfigError(
        "headers",
        `\`headers\` must be one of ${HEADER_FORMATS.map((f) => `"${f}"`).join(", ")} or false (got ${describeValue(headers)})`,
        headers,
      );
    }
    this.format = headers === false ? undefined : headers;
    this.dryRun = options.dryRun === true;
    this.#honorDelay = options.honorDelay !== false;
    this.#clock = options.clock ?? systemClock;
    if (options.service !== undefined) {
      if (options.spec !== undefined)
        throw new ConfigError("spec", "give either `spec` or `service` + `rule`, not both");
      if (typeof options.rule !== "string" || options.rule === "") {
        throw new ConfigError("rule", `\`rule\` must name a rule of \`service\` (got ${describeValue(options.rule)})`);
      }
      if (options.store !== undefined || options.clock !== undefined) {
        throw new ConfigError("store", "`store` and `clock` belong to the service when `service` is given");
      }
      this.#service = options.service;
      this.#rule = options.rule;
    } else {
      if (options.spec === undefined) throw new ConfigError("spec", "`spec` (or `service` + `rule`) is required");
      if (options.tier !== undefined)
        throw new ConfigError("tier", "`tier` needs `service` + `rule` (tiers are service rules)");
      const limiterOptions: { clock?: Clock; store?: NonNullable<typeof options.store> } = {};
      if (options.clock !== undefined) limiterOptions.clock = options.clock;
      if (options.store !== undefined) limiterOptions.store = options.store;
      this.#limiter = createLimiter(options.spec, limiterOptions);
      this.#rule = typeof options.policyName === "string" ? options.policyName : "default";
      this.#policies = compilePolicies(policiesFor(this.#limiter.specs, options.policyName ?? "default"));
    }
  }

  /** The default key: the client address, as far as `trustProxy` allows. */
  clientAddress(request: Req): string | undefined {
    const reader = this.#reader;
    const socket = reader.address(request);
    if (socket === undefined) {
      this.#warn(
        "SLUICE_NO_CLIENT_ADDRESS",
        "sluice rateLimit: the request has no client address, so clients share one bucket; pass the address (or a `key` function)",
      );
      return undefined;
    }
    const raw = reader.header(request, this.#proxyHeader);
    if (this.#trust.kind === "none") {
      if (raw !== undefined && this.#proxyHeader === "x-forwarded-for") this.#warnForwarded(socket);
      const cache = this.#keyCache;
      let key = cache.get(socket);
      if (key === undefined) {
        const bytes = resolveClient(socket, [], this.#trust);
        key = bytes === undefined ? socket : addressKey(bytes, this.#subnet);
        // Bounded: a flood of distinct peers only costs a re-parse once the cache is full.
        if (cache.size >= KEY_CACHE_SIZE) cache.clear();
        cache.set(socket, key);
      }
      return key;
    }
    if (raw === undefined) {
      this.#warn(
        "SLUICE_TRUST_PROXY_NO_HEADER",
        `sluice rateLimit: \`trustProxy\` is set but a request from ${socket} carried no ${this.#proxyHeader} header; every client behind that proxy shares one bucket. Check the proxy adds it, or the \`proxyHeader\` option.`,
      );
    }
    const chain = raw === undefined ? [] : this.#proxyHeader === "forwarded" ? forwardedFor(raw) : raw.split(",");
    const bytes = resolveClient(socket, chain, this.#trust);
    return bytes === undefined ? socket : addressKey(bytes, this.#subnet);
  }

  #warnForwarded(socket: string): void {
    // A forwarding header from a private or loopback peer usually means a proxy in front that
    // is not trusted: every client then shares the proxy's bucket.
    if (/^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|::ffff:(127|10|192\.168)\.|f[cd])/i.test(socket)) {
      this.#warn(
        "SLUICE_UNTRUSTED_FORWARDED",
        `sluice rateLimit: a request from ${socket} carried X-Forwarded-For but \`trustProxy\` is off, so it was keyed by ${socket}. If a proxy is in front, set \`trustProxy\` to its hop count or addresses.`,
      );
    }
  }

  /** Decides a request: null when skipped, else the verdict (a promise only when something async ran). */
  decide(request: Req): MaybePromise<Verdict | null> {
    const skip = this.#options.skip;
    if (skip !== undefined) {
      return then(skip(request), (skipped) => (skipped === true ? null : this.#keyed(request)));
    }
    return this.#keyed(request);
  }

  #keyed(request: Req): MaybePromise<Verdict> {
    const keyFn = this.#options.key;
    if (keyFn === undefined) return this.#costed(request, boundKey(this.clientAddress(request) ?? "unknown"));
    // Only compute the address when the key function asks for it (its second parameter).
    const address = keyFn.length >= 2 ? this.clientAddress(request) : undefined;
    return then(keyFn(request, address), (key) => {
      if (typeof key !== "string") {
        throw new ArgumentError(`\`key\` must return a string (got ${describeValue(key)})`);
      }
      return this.#costed(request, boundKey(key));
    });
  }

  #costed(request: Req, key: string): MaybePromise<Verdict> {
    const costFn = this.#options.cost;
    const tierFn = this.#options.tier;
    if (costFn === undefined && tierFn === undefined) return this.#check(request, key, 1, undefined);
    return then(costFn === undefined ? 1 : costFn(request), (cost) =>
      then(tierFn === undefined ? undefined : tierFn(request), (tier) => this.#check(request, key, cost, tier)),
    );
  }

  #check(request: Req, key: string, cost: number, tier: string | undefined): MaybePromise<Verdict> {
    if (this.#limiter !== undefined) {
      const policies = this.#policies as PolicySet;
      return then(this.#limiter.tryAcquire(key, cost), (d) => this.#verdict(request, d, policies, key, cost, tier));
    }
    const service = this.#service as RateLimiterService<Store>;
    const result = service.check(this.#rule, key, tier === undefined ? { cost } : { cost, tier });
    return then(result, (d) => this.#verdict(request, d, this.#servicePolicySet(tier), key, cost, tier));
  }

  #servicePolicySet(tier: string | undefined): PolicySet {
    // Looked up per request so a rule changed by updateRule is advertised as it now is.
    const info = (this.#service as RateLimiterService<Store>).getRule(this.#rule as string);
    if (info === undefined) throw new UnknownRuleError(this.#rule as string);
    let byTier = this.#servicePolicies.get(info);
    if (byTier === undefined) this.#servicePolicies.set(info, (byTier = new Map()));
    const slot = tier ?? "";
    let set = byTier.get(slot);
    if (set === undefined) {
      const specs = tier === undefined ? info.specs : (info.tiers[tier] ?? info.specs);
      set = compilePolicies(policiesFor(specs, this.#options.policyName ?? this.#rule));
      byTier.set(slot, set);
    }
    return set;
  }

  #verdict(
    request: Req,
    decision: Decision,
    policies: PolicySet,
    key: string,
    cost: number,
    tier: string | undefined,
  ): MaybePromise<Verdict> {
    const failed = decision.failure?.policy === "deny";
    const status = this.dryRun ? 200 : failed ? 503 : decision.allowed ? 200 : 429;
    const onDecision = this.#options.onDecision;
    if (onDecision !== undefined) {
      const info: DecisionInfo = { key, cost, tier, dryRun: this.dryRun, status };
      onDecision(request, decision, this.#rule, info);
    }
    const verdict: Verdict = { status, decision, policies };
    // A leaky bucket admits a request with a delay: honouring it is what smooths the outflow.
    if (status === 200 && decision.allowed && decision.delayMs > 0 && !this.dryRun && this.#honorDelay) {
      return sleep(this.#clock, decision.delayMs).then(() => verdict);
    }
    return verdict;
  }

  /** Writes the verdict's headers: rate-limit headers, `Retry-After` on 429, the dry-run report. */
  writeHeaders(verdict: Verdict, header: SetHeader): void {
    const { decision } = verdict;
    if (this.format !== undefined) {
      const counts = decision.failure === undefined || decision.failure.policy === "fallback";
      writeRateLimitHeaders(this.format, verdict.policies, decision, counts, () => this.#clock.now(), header);
    }
    if (verdict.status === 429) {
      const retry = retryAfterSeconds(decision);
      if (retry !== undefined) header("Retry-After", retry);
    }
    if (this.dryRun) header("Sluice-Dry-Run", decision.allowed ? "would-allow" : "would-deny");
  }

  /** The problem body (JSON text) of a 429 or 503 verdict. */
  body(verdict: Verdict): string {
    const problem =
      verdict.status === 503 ? storeUnavailable() : quotaExceeded(verdict.decision, verdict.policies.policies);
    return JSON.stringify(problem);
  }
}

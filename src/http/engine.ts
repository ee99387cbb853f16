/**
 * The framework-neutral middleware: options → limiter; request → lists, key, cost, tier →
 * Decision → Verdict (status + what to write); after the response, refunds for `count`.
 * Adapters (Node, Express, Fastify, Hono, fetch, and any new one) only:
 *
 * 1. build `new Engine(options, reader, ["onLimited", …their own option names])`;
 * 2. call `decide(request)` — `null` means skipped / allow-listed: pass on untouched;
 * 3. `writeHeaders(verdict, set, get)` — `get` reads headers already set, so stacked limiters merge;
 * 4. put `verdict.decision` on the request (see `tighter`) when there is one;
 * 5. status 200: run the handler; otherwise answer `verdict.status` with `body(verdict)` as
 *    `PROBLEM_CONTENT_TYPE` (or their `onLimited` on 429);
 * 6. when `observes(verdict)`, report how the response ended: `settle(verdict, req, res, status)`
 *    with the final status, or `undefined` when it never completed (abort, handler threw).
 *
 * A check on the in-process store stays synchronous end to end (no promise, no microtask)
 * unless a hook is async; on Redis it is one awaited round trip.
 */

import type { Decision } from "../algorithms/decision.ts";
import { type Clock, sleep, systemClock } from "../clock.ts";
import { ArgumentError, ConfigError, UnknownRuleError } from "../errors.ts";
import { createLimiter, type Limiter } from "../limiter.ts";
import type { RateLimiterService, RuleInfo } from "../service.ts";
import { describeValue } from "../spec.ts";
import type { Store } from "../store.ts";
import { checkChoice, checkFunction, checkOptionKeys } from "./check-options.ts";
import { ClientAddresses, type RequestReader, warner } from "./client-address.ts";
import { boundKey, storeKey } from "./client-key.ts";
import { type Charge, COUNT_MODES, limiterRefund, type Refund, refunds, serviceRefund } from "./count-mode.ts";
import {
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type PolicySet,
  retryAfterSeconds,
  type SetHeader,
  writeRateLimitHeaders,
} from "./headers.ts";
import { type AddressList, compileList } from "./lists.ts";
import type { CountMode, DecisionInfo, MaybePromise, RateLimitOptions, UnknownTierPolicy } from "./options.ts";
import { policiesFor } from "./policy.ts";
import * as problems from "./problem.ts";
import { distinctFrom, type GetHeader, listNames, stackingSetter } from "./stack.ts";

export type { RequestReader } from "./client-address.ts";
export type { GetHeader } from "./stack.ts";

/** A request that was checked: passed on (200), banned (403), limited (429), or the store failed (503). */
export interface CheckedVerdict {
  readonly status: 200 | 403 | 429 | 503;
  readonly decision: Decision;
  readonly policies: PolicySet;
  /** What the request was charged (for `count` refunds). */
  readonly charge: Charge;
}

/** A request refused without a check: deny-listed (403) or an unknown tier (400). */
export interface RefusedVerdict {
  readonly status: 400 | 403;
  readonly decision: undefined;
  readonly problem: problems.ProblemDetails;
}

/** What the middleware does with a request. */
export type Verdict = CheckedVerdict | RefusedVerdict;

/** True when `value` is a promise (or any thenable). */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Applies `fn` to a value or a promise of it, staying synchronous for plain values. */
function then<T, U>(value: MaybePromise<T>, fn: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(fn) : fn(value);
}

/** The shared middleware logic; one per `rateLimit(...)` call. */
export class Engine<Req, Res = unknown> {
  readonly #options: RateLimitOptions<Req, Res>;
  readonly #clients: ClientAddresses<Req>;
  readonly #allow: AddressList | undefined;
  readonly #deny: AddressList | undefined;
  readonly #limiter: Limiter | undefined;
  readonly #service: RateLimiterService<Store> | undefined;
  readonly #rule: string;
  readonly #policies: PolicySet | undefined;
  readonly #servicePolicies = new WeakMap<RuleInfo, Map<string, PolicySet>>();
  readonly #clock: Clock;
  readonly #warn = warner();
  readonly #count: CountMode;
  readonly #refund: Refund;
  readonly #unknownTier: UnknownTierPolicy;
  /** Header layout, or undefined for none. */
  readonly format: HeaderFormat | undefined;
  /** Whether the middleware only reports. */
  readonly dryRun: boolean;
  readonly #honorDelay: boolean;

  /** `adapterKeys`: the options the adapter reads itself; any other unknown key is refused. */
  constructor(options: RateLimitOptions<Req, Res>, reader: RequestReader<Req>, adapterKeys: readonly string[] = []) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("options", `rateLimit options must be an object (got ${describeValue(options)})`, options);
    }
    checkOptionKeys(options, adapterKeys);
    this.#options = options;
    for (const name of ["key", "cost", "tier", "skip", "onDecision", "requestWasSuccessful"])
      checkFunction(options, name);
    this.#clients = new ClientAddresses(options, reader, this.#warn);
    this.#allow = compileList("allowList", options.allowList);
    this.#deny = compileList("denyList", options.denyList);
    const headers = checkChoice<HeaderFormat | false>(options, "headers", [...HEADER_FORMATS, false], "draft-11");
    this.format = headers === false ? undefined : headers;
    this.#count = checkChoice(options, "count", COUNT_MODES, "all");
    this.#unknownTier = checkChoice<UnknownTierPolicy>(options, "onUnknownTier", ["reject", "base", "throw"], "reject");
    this.dryRun = options.dryRun === true;
    this.#honorDelay = options.honorDelay !== false;
    this.#clock = options.clock ?? systemClock;
    if (options.service !== undefined) {
      for (const field of ["spec", "name", "ban", "store", "clock"] as const) {
        if (options[field] !== undefined) {
          throw new ConfigError(
            field,
            `\`${field}\` belongs to \`spec\` limiters; with \`service\` the rule decides it`,
          );
        }
      }
      if (typeof options.rule !== "string" || options.rule === "") {
        throw new ConfigError("rule", `\`rule\` must name a rule of \`service\` (got ${describeValue(options.rule)})`);
      }
      this.#service = options.service;
      this.#rule = options.rule;
      this.#refund = serviceRefund(options.service, options.rule);
      return;
    }
    if (options.spec === undefined) throw new ConfigError("spec", "`spec` (or `service` + `rule`) is required");
    if (options.tier !== undefined)
      throw new ConfigError("tier", "`tier` needs `service` + `rule` (tiers are service rules)");
    if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
      throw new ConfigError(
        "name",
        `\`name\` must be a non-empty string (got ${describeValue(options.name)})`,
        options.name,
      );
    }
    const limiterOptions: Parameters<typeof createLimiter>[1] & object = {};
    if (options.clock !== undefined) limiterOptions.clock = options.clock;
    if (options.store !== undefined) limiterOptions.store = options.store;
    if (options.name !== undefined) limiterOptions.name = options.name;
    if (options.ban !== undefined) limiterOptions.ban = options.ban;
    this.#limiter = createLimiter(options.spec, limiterOptions);
    this.#refund = limiterRefund(this.#limiter);
    // A name that fits a header is the natural policy name: stacked middlewares then differ.
    const fallback = options.name !== undefined && /^[\x20-\x7e]+$/.test(options.name) ? options.name : "default";
    const policyName = options.policyName ?? fallback;
    this.#rule = typeof policyName === "string" ? policyName : fallback;
    this.#policies = compilePolicies(policiesFor(this.#limiter.specs, policyName));
  }

  /** The default key of a request: its client address as far as `trustProxy` allows. */
  clientAddress(request: Req): string | undefined {
    return this.#clients.of(request)?.key;
  }

  /** Decides a request: null when skipped or allow-listed, else the verdict (a promise only when something async ran). */
  decide(request: Req): MaybePromise<Verdict | null> {
    const skip = this.#options.skip;
    if (skip !== undefined) {
      return then(skip(request), (skipped) => (skipped === true ? null : this.#listed(request)));
    }
    return this.#listed(request);
  }

  #listed(request: Req): MaybePromise<Verdict | null> {
    if (this.#allow === undefined && this.#deny === undefined) return this.#keyed(request, undefined);
    const client = this.#clients.of(request);
    const bytes = client?.bytes;
    if (bytes !== undefined && this.#deny?.has(bytes))
      return { status: 403, decision: undefined, problem: problems.denied() };
    if (bytes !== undefined && this.#allow?.has(bytes)) return null;
    return this.#keyed(request, client?.key);
  }

  #keyed(request: Req, known: string | undefined): MaybePromise<Verdict> {
    const keyFn = this.#options.key;
    const address = () => known ?? this.clientAddress(request);
    if (keyFn === undefined) return this.#costed(request, address() ?? "unknown", true);
    // Only compute the address when the key function asks for it (its second parameter).
    return then(keyFn(request, keyFn.length >= 2 ? address() : undefined), (key) => {
      if (key === undefined) return this.#costed(request, address() ?? "unknown", true);
      if (typeof key !== "string")
        throw new ArgumentError(`\`key\` must return a string or undefined (got ${describeValue(key)})`);
      return this.#costed(request, key, false);
    });
  }

  #costed(request: Req, key: string, isAddress: boolean): MaybePromise<Verdict> {
    const costFn = this.#options.cost;
    const tierFn = this.#options.tier;
    if (costFn === undefined && tierFn === undefined) return this.#check(request, key, isAddress, 1, undefined);
    return then(costFn === undefined ? 1 : costFn(request), (cost) =>
      then(tierFn === undefined ? undefined : tierFn(request), (tier) =>
        this.#check(request, key, isAddress, cost, tier),
      ),
    );
  }

  #check(request: Req, key: string, isAddress: boolean, cost: number, tier: string | undefined): MaybePromise<Verdict> {
    const charge: Charge = { key: storeKey(key, isAddress), cost, tier };
    const shown = isAddress ? key : boundKey(key);
    if (this.#limiter !== undefined) {
      const policies = this.#policies as PolicySet;
      return then(this.#limiter.tryAcquire(charge.key, cost), (d) =>
        this.#verdict(request, d, policies, charge, shown),
      );
    }
    const service = this.#service as RateLimiterService<Store>;
    const info = service.getRule(this.#rule);
    if (info === undefined) throw new UnknownRuleError(this.#rule);
    if (tier !== undefined && !Object.hasOwn(info.tiers, tier) && this.#unknownTier !== "throw") {
      if (this.#unknownTier === "reject") {
        return {
          status: 400,
          decision: undefined,
          problem: problems.unknownTier(tier, this.#rule, Object.keys(info.tiers)),
        };
      }
      return this.#check(request, key, isAddress, cost, undefined);
    }
    const result = service.check(this.#rule, charge.key, tier === undefined ? { cost } : { cost, tier });
    return then(result, (d) => this.#verdict(request, d, this.#servicePolicySet(info, tier), charge, shown));
  }

  #servicePolicySet(info: RuleInfo, tier: string | undefined): PolicySet {
    // Keyed by the rule's info object, so a rule changed by updateRule is advertised as it now is.
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
    charge: Charge,
    shown: string,
  ): MaybePromise<Verdict> {
    const failed = decision.failure?.policy === "deny";
    const status = this.dryRun
      ? 200
      : failed
        ? 503
        : (decision as { banned?: true }).banned === true
          ? 403
          : decision.allowed
            ? 200
            : 429;
    const onDecision = this.#options.onDecision;
    if (onDecision !== undefined) {
      const info: DecisionInfo = { key: shown, cost: charge.cost, tier: charge.tier, dryRun: this.dryRun, status };
      onDecision(request, decision, this.#rule, info);
    }
    const verdict: CheckedVerdict = { status, decision, policies, charge };
    // A leaky bucket admits a request with a delay: honouring it is what smooths the outflow.
    if (status === 200 && decision.allowed && decision.delayMs > 0 && !this.dryRun && this.#honorDelay) {
      return sleep(this.#clock, decision.delayMs).then(() => verdict);
    }
    return verdict;
  }

  /**
   * Writes the verdict's headers: rate-limit headers, `Retry-After` on 429 and bans, the
   * dry-run report. `get` reads what the response already has, so a second limiter on the
   * route appends to the draft-11 lists instead of replacing them.
   */
  writeHeaders(verdict: Verdict, set: SetHeader, get?: GetHeader): void {
    if (verdict.decision === undefined) return;
    const { decision } = verdict;
    const header = get === undefined ? set : stackingSetter(set, get);
    if (this.format !== undefined) {
      const counts = decision.failure === undefined || decision.failure.policy === "fallback";
      const taken = this.format === "draft-11" && get !== undefined ? get("RateLimit-Policy") : undefined;
      const names = taken === undefined ? undefined : listNames(taken);
      const policies = names === undefined ? verdict.policies : distinctFrom(verdict.policies, names);
      writeRateLimitHeaders(this.format, policies, decision, counts, () => this.#clock.now(), header);
    }
    if (verdict.status === 429 || verdict.status === 403) {
      const retry = retryAfterSeconds(decision);
      if (retry !== undefined) header("Retry-After", retry);
    }
    if (this.dryRun) set("Sluice-Dry-Run", decision.allowed ? "would-allow" : "would-deny");
  }

  /** The problem body (JSON text, `PROBLEM_CONTENT_TYPE`) of a verdict that is not 200. */
  body(verdict: Verdict): string {
    if (verdict.decision === undefined) return JSON.stringify(verdict.problem);
    const problem =
      verdict.status === 503
        ? problems.storeUnavailable()
        : verdict.status === 403
          ? problems.banned(verdict.decision)
          : problems.quotaExceeded(verdict.decision, verdict.policies.policies);
    return JSON.stringify(problem);
  }

  /** True when the adapter must report how this verdict's response ended (`count` is not "all"). */
  observes(verdict: Verdict): verdict is CheckedVerdict {
    return (
      this.#count !== "all" &&
      verdict.decision !== undefined &&
      verdict.decision.allowed &&
      verdict.decision.failure === undefined
    );
  }

  /**
   * The response to an observed verdict ended: with `status`, or never completed (`undefined`).
   * Gives the units back when this request should not count. Never throws: a failed refund
   * only leaves the request counted (the safe side), and is reported once.
   */
  settle(verdict: CheckedVerdict, request: Req, response: Res, status: number | undefined): void {
    let succeeded = false;
    try {
      const judge = this.#options.requestWasSuccessful;
      succeeded = status !== undefined && (judge === undefined ? status < 400 : judge(request, response) === true);
    } catch (error) {
      this.#refundFailed(error);
    }
    if (!refunds(this.#count, succeeded)) return;
    try {
      const result = this.#refund(verdict.charge);
      if (isPromise(result)) result.then(undefined, (error: unknown) => this.#refundFailed(error));
    } catch (error) {
      this.#refundFailed(error);
    }
  }

  #refundFailed(error: unknown): void {
    this.#warn(
      "SLUICE_REFUND_FAILED",
      `sluice rateLimit: a \`count\` refund failed, so the request stayed counted: ${String(error)}`,
    );
  }
}

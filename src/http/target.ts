/**
 * What a middleware checks requests against: its own limiter (`spec`, with `name`, `ban`,
 * `store`, `clock`) or a service rule (`service` + `rule`, tiers chosen per request). Both
 * answer a check with the decision and the policies to advertise, and give units back.
 */
import type { Decision } from "../algorithms/decision.ts";
import { ConfigError, UnknownRuleError } from "../errors.ts";
import { createLimiter, type LimiterOptions } from "../limiter.ts";
import type { RuleInfo } from "../service.ts";
import { describeValue } from "../spec.ts";
import type { Warn } from "./client-address.ts";
import { limiterRefund, type Refund, serviceRefund } from "./count-mode.ts";
import { compilePolicies, type PolicySet } from "./headers.ts";
import { andThen, isPromise } from "./maybe-promise.ts";
import type { MaybePromise, RateLimitOptions, UnknownTierPolicy } from "./options.ts";
import { policiesFor } from "./policy.ts";
import { type ProblemDetails, unknownTier } from "./problem.ts";

/** What a check continues with: the decision, the policies it is advertised under, the tier used. */
export type Continue<T> = (decision: Decision, policies: PolicySet, tier: string | undefined) => MaybePromise<T>;

/** A limiter or a service rule, as the engine uses it. */
export interface Target {
  /** The rule / policy name `onDecision` reports. */
  readonly rule: string;
  /**
   * Takes `cost` units of `key` and continues with `next` (continuation style: no object per
   * request); a problem (400) instead when `tier` does not exist and the policy is "reject".
   */
  check<T>(key: string, cost: number, tier: string | undefined, next: Continue<T>): MaybePromise<T> | ProblemDetails;
  /** Gives a charge back. */
  readonly refund: Refund;
}

/** True when a check answered a problem rather than continuing. */
export function isProblem(value: unknown): value is ProblemDetails {
  return typeof value === "object" && value !== null && "type" in value && "status" in value && !isPromise(value);
}

/** The target `options` describe (validated here, at construction). */
export function targetOf(
  options: RateLimitOptions<never, never>,
  onUnknownTier: UnknownTierPolicy,
  warn: Warn = () => undefined,
): Target {
  return options.service === undefined ? limiterTarget(options) : serviceTarget(options, onUnknownTier, warn);
}

function limiterTarget(options: RateLimitOptions<never, never>): Target {
  if (options.spec === undefined) throw new ConfigError("spec", "`spec` (or `service` + `rule`) is required");
  if (options.tier !== undefined) {
    throw new ConfigError("tier", "`tier` needs `service` + `rule` (tiers are service rules)");
  }
  const { name } = options;
  if (name !== undefined && (typeof name !== "string" || name === "")) {
    throw new ConfigError("name", `\`name\` must be a non-empty string (got ${describeValue(name)})`, name);
  }
  const limiterOptions: LimiterOptions = {};
  if (options.clock !== undefined) limiterOptions.clock = options.clock;
  if (options.store !== undefined) limiterOptions.store = options.store;
  if (name !== undefined) limiterOptions.name = name;
  if (options.ban !== undefined) limiterOptions.ban = options.ban;
  const limiter = createLimiter(options.spec, limiterOptions);
  // A name that fits a header is the natural policy name: stacked middlewares then differ.
  const fallback = name !== undefined && /^[\x20-\x7e]+$/.test(name) ? name : "default";
  const policyName = options.policyName ?? fallback;
  const policies = compilePolicies(policiesFor(limiter.specs, policyName));
  return {
    rule: typeof policyName === "string" ? policyName : fallback,
    check: (key, cost, _tier, next) => {
      const result = limiter.tryAcquire(key, cost);
      return isPromise(result) ? result.then((d) => next(d, policies, undefined)) : next(result, policies, undefined);
    },
    refund: limiterRefund(limiter),
  };
}

function serviceTarget(options: RateLimitOptions<never, never>, onUnknownTier: UnknownTierPolicy, warn: Warn): Target {
  for (const field of ["spec", "name", "ban", "store", "clock"] as const) {
    if (options[field] !== undefined) {
      throw new ConfigError(field, `\`${field}\` belongs to \`spec\` limiters; with \`service\` the rule decides it`);
    }
  }
  const { rule } = options;
  if (typeof rule !== "string" || rule === "") {
    throw new ConfigError("rule", `\`rule\` must name a rule of \`service\` (got ${describeValue(rule)})`);
  }
  const service = options.service as NonNullable<typeof options.service>;
  // Keyed by the rule's info object, so a rule changed by updateRule is advertised as it now is.
  const cache = new WeakMap<RuleInfo, Map<string, PolicySet>>();
  const policiesOf = (info: RuleInfo, tier: string | undefined): PolicySet => {
    let byTier = cache.get(info);
    if (byTier === undefined) cache.set(info, (byTier = new Map()));
    let set = byTier.get(tier ?? "");
    if (set === undefined) {
      const specs = tier === undefined ? info.specs : (info.tiers[tier] ?? info.specs);
      set = compilePolicies(policiesFor(specs, options.policyName ?? rule));
      byTier.set(tier ?? "", set);
    }
    return set;
  };
  return {
    rule,
    check: (key, cost, requested, next) => {
      const info = service.getRule(rule);
      if (info === undefined) throw new UnknownRuleError(rule);
      let tier = requested;
      if (tier !== undefined && !Object.hasOwn(info.tiers, tier) && onUnknownTier !== "throw") {
        if (onUnknownTier === "reject") {
          // The client is told only that its tier is unknown: listing the others would let it
          // pick one through the same header. The operator learns them from the warning.
          const known = Object.keys(info.tiers).map((t) => JSON.stringify(t));
          warn(
            "SLUICE_UNKNOWN_TIER",
            `sluice rateLimit: tier(req) named tier ${JSON.stringify(tier)}, which rule ${JSON.stringify(rule)} does not have (its tiers: ${known.join(", ") || "none"}); answered 400`,
          );
          return unknownTier(tier, rule);
        }
        tier = undefined;
      }
      const used = tier;
      const result = service.check(rule, key, used === undefined ? { cost } : { cost, tier: used });
      return andThen(result, (decision) => next(decision, policiesOf(info, used), used));
    },
    refund: serviceRefund(service, rule),
  };
}

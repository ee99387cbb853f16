/**
 * What a middleware checks requests against: its own limiter (`spec`, with `name`, `ban`,
 * `store`, `clock`) or a service rule (`service` + `rule`, tiers chosen per request). Both
 * answer a check with the decision and the policies to advertise, and give units back.
 */
import type { Decision } from "../algorithms/decision.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError, UnknownRuleError } from "../core/errors.ts";
import { type RuleSpec, validateRule } from "../core/spec.ts";
import { createLimiter, type LimiterOptions } from "../limiter.ts";
import type { RuleInfo } from "../service.ts";
import { MemoryStore } from "../stores/memory/memory-store.ts";
import type { Warn } from "./client-address.ts";
import { limiterRefund, type Refund, serviceRefund } from "./count-mode.ts";
import type { PeekOptions } from "./handles.ts";
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
  /** Forgets a store key (every tier / rule shape). */
  reset(key: string): MaybePromise<void>;
  /** What a cost-1 check of a store key would say now. */
  peek(key: string, options: PeekOptions | undefined): MaybePromise<Decision>;
  /** A store key's state now (`null` when unknown, where the limiter can tell). */
  get(key: string, options: PeekOptions | undefined): MaybePromise<Decision | null>;
  /** With a function `spec`: the target of one resolved spec (throws ConfigError when invalid). */
  shape?(spec: unknown): Target;
}

/** A limiter that may answer `get` (rate-limiter-flexible's call); `peek` stands in otherwise. */
type MaybeGet = { get?: (key: string) => MaybePromise<Decision | null> };

/** The tightest of several decisions (denied first, then the fewest remaining). */
function tightest(decisions: readonly Decision[]): Decision | undefined {
  let out: Decision | undefined;
  for (const d of decisions) {
    if (out === undefined || (out.allowed && !d.allowed) || (out.allowed === d.allowed && d.remaining < out.remaining))
      out = d;
  }
  return out;
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
  if (options.service !== undefined) return serviceTarget(options, onUnknownTier, warn);
  return typeof options.spec === "function" ? dynamicTarget(options) : limiterTarget(options);
}

/** Compiled rule shapes a function `spec` keeps (least recently used dropped first; state stays in the store). */
export const SPEC_CACHE_SIZE = 256;
/** Rule shapes remembered for `reset` (beyond it, the oldest shapes are no longer reset). */
const SHAPES_REMEMBERED = 4096;

/**
 * `spec: (req) => spec`: one limiter per resolved rule shape, all on one store, each shape's
 * state named after the shape (so "10/min" and "100/min" never share a counter, and a shape
 * compiled again after eviction finds its state where it left it).
 */
function dynamicTarget(options: RateLimitOptions<never, never>): Target {
  checkName(options.name);
  if (options.tier !== undefined) {
    throw new ConfigError("tier", "`tier` needs `service` + `rule` (tiers are service rules)");
  }
  // One store for every shape: without it each shape would get its own MemoryStore, lost on eviction.
  const store = options.store ?? new MemoryStore();
  const byObject = new WeakMap<object, Target>();
  const byShape = new Map<string, Target>();
  const seen = new Map<string, unknown>();
  const fallback = policyFallback(options.name);
  const build = (spec: unknown): Target => {
    const specs = validateRule(spec, "`spec` returned: ");
    const shape = `${Array.isArray(spec) ? "all" : "one"}:${JSON.stringify(specs)}`;
    let target = byShape.get(shape);
    if (target !== undefined) {
      byShape.delete(shape); // re-inserted below: most recently used last
    } else {
      target = limiterTarget({
        ...options,
        spec: spec as RuleSpec,
        store,
        name: `${options.name ?? "dynamic"}|${shape}`,
        policyName: options.policyName ?? fallback,
      });
      if (byShape.size >= SPEC_CACHE_SIZE) byShape.delete(byShape.keys().next().value as string);
    }
    byShape.set(shape, target);
    if (!seen.has(shape)) {
      if (seen.size >= SHAPES_REMEMBERED) seen.delete(seen.keys().next().value as string);
      seen.set(shape, spec);
    }
    return target;
  };
  const shape = (spec: unknown): Target => {
    if (typeof spec === "object" && spec !== null) {
      const hit = byObject.get(spec);
      if (hit !== undefined) return hit;
      const target = build(spec);
      byObject.set(spec, target);
      return target;
    }
    return build(spec);
  };
  const all = (): Target[] => [...seen.values()].map((spec) => shape(spec));
  return {
    rule: typeof options.policyName === "string" ? options.policyName : fallback,
    check: () => {
      throw new ConfigError("spec", "a function `spec` is checked through its resolved shape");
    },
    refund: (charge) => {
      const target = charge.shape as Target | undefined;
      if (target === undefined) throw new ArgumentError("a charge of a function `spec` carries its shape");
      return target.refund(charge);
    },
    shape,
    reset: (key) => {
      const results = all().map((t) => t.reset(key));
      return results.some(isPromise) ? Promise.all(results).then(() => undefined) : undefined;
    },
    peek: (key, peekOptions) => {
      if (peekOptions?.spec !== undefined) return shape(peekOptions.spec).peek(key, undefined);
      return andThen(allOf(all().map((t) => t.peek(key, undefined))), (ds) => tightestOrFresh(ds, key));
    },
    get: (key, peekOptions) => {
      if (peekOptions?.spec !== undefined) return shape(peekOptions.spec).get(key, undefined);
      return andThen(allOf(all().map((t) => t.get(key, undefined))), (ds) => {
        const known = ds.filter((d): d is Decision => d !== null);
        return tightest(known) ?? null;
      });
    },
  };
}

function tightestOrFresh(decisions: readonly Decision[], key: string): Decision {
  const out = tightest(decisions);
  if (out === undefined) {
    throw new ArgumentError(
      `no \`spec\` has been resolved yet, so ${JSON.stringify(key)} has no rule to peek: pass { spec }`,
    );
  }
  return out;
}

function allOf<T>(values: readonly MaybePromise<T>[]): MaybePromise<T[]> {
  return values.some(isPromise) ? Promise.all(values) : (values as T[]);
}

function checkName(name: unknown): void {
  if (name !== undefined && (typeof name !== "string" || name === "")) {
    throw new ConfigError("name", `\`name\` must be a non-empty string (got ${describeValue(name)})`, name);
  }
}

/** A name that fits a header is the natural policy name: stacked middlewares then differ. */
function policyFallback(name: string | undefined): string {
  return name !== undefined && /^[\x20-\x7e]+$/.test(name) ? name : "default";
}

function limiterTarget(options: RateLimitOptions<never, never>): Target {
  if (options.spec === undefined) throw new ConfigError("spec", "`spec` (or `service` + `rule`) is required");
  if (options.tier !== undefined) {
    throw new ConfigError("tier", "`tier` needs `service` + `rule` (tiers are service rules)");
  }
  const { name } = options;
  checkName(name);
  const limiterOptions: LimiterOptions = {};
  if (options.clock !== undefined) limiterOptions.clock = options.clock;
  if (options.store !== undefined) limiterOptions.store = options.store;
  if (name !== undefined) limiterOptions.name = name;
  if (options.ban !== undefined) limiterOptions.ban = options.ban;
  const limiter = createLimiter(options.spec as RuleSpec, limiterOptions);
  const fallback = policyFallback(name);
  const policyName = options.policyName ?? fallback;
  const policies = compilePolicies(policiesFor(limiter.specs, policyName));
  return {
    rule: typeof policyName === "string" ? policyName : fallback,
    check: (key, cost, _tier, next) => {
      const result = limiter.tryAcquire(key, cost);
      return isPromise(result) ? result.then((d) => next(d, policies, undefined)) : next(result, policies, undefined);
    },
    refund: limiterRefund(limiter),
    reset: (key) => limiter.reset(key),
    peek: (key) => limiter.peek(key),
    get: (key) => {
      const get = (limiter as MaybeGet).get;
      return typeof get === "function" ? get.call(limiter, key) : limiter.peek(key);
    },
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
    reset: (key) => service.reset(rule, key),
    peek: (key, peekOptions) =>
      service.peek(rule, key, peekOptions?.tier === undefined ? undefined : { tier: peekOptions.tier }),
    get: (key, peekOptions) => {
      const get = (service as unknown as { get?: (r: string, k: string, o?: object) => MaybePromise<Decision | null> })
        .get;
      const tier = peekOptions?.tier === undefined ? undefined : { tier: peekOptions.tier };
      return typeof get === "function" ? get.call(service, rule, key, tier) : service.peek(rule, key, tier);
    },
  };
}

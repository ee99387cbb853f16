/**
 * `instrument(limiter | service)`, `instrumentStore(store)` and `instrumentMiddleware(options)`:
 * record every decision in OpenTelemetry metrics (see metrics.ts) by wrapping the object's
 * deciding methods, for objects built elsewhere. Where you build the limiter or service
 * yourself, `decisionMetrics()` (hook.ts) plugs into the core's `onDecision` hook instead.
 */
import type { Decision } from "../algorithms/decision.ts";
import { reportedRule } from "../core/identity.ts";
import type { BoundRule, Store } from "../core/store.ts";
import type { RateLimitOptions } from "../http/options.ts";
import type { Limiter } from "../limiter.ts";
import { RateLimiterService } from "../service.ts";
import { MemoryStore } from "../stores/memory/memory-store.ts";
import { DecisionMetrics, type MetricsOptions, OTHER_RULE, storeKind } from "./metrics.ts";

/** Options of `instrument`. */
export interface InstrumentOptions extends MetricsOptions {
  /** The `sluice.rule` attribute for a limiter (default "default"); a service reports each rule's name. */
  rule?: string;
}

const isPromise = (value: unknown): value is Promise<Decision> =>
  typeof (value as { then?: unknown } | null)?.then === "function";

/** Times `run` and records its decision (or its failure), staying synchronous for plain values. */
function measured<R>(metrics: DecisionMetrics, rule: string, run: () => R): R {
  const start = performance.now();
  let result: R;
  try {
    result = run();
  } catch (error) {
    metrics.failed(rule, error);
    throw error;
  }
  if (isPromise(result)) {
    return result.then(
      (decision) => {
        metrics.decided(rule, decision, (performance.now() - start) / 1000);
        return decision;
      },
      (error: unknown) => {
        metrics.failed(rule, error);
        throw error;
      },
    ) as R;
  }
  metrics.decided(rule, result as Decision, (performance.now() - start) / 1000);
  return result;
}

/**
 * Returns `target` reporting decisions: a limiter's `tryAcquire` and `acquire`, a service's
 * `check`. Peeks, resets and everything else pass through unrecorded.
 *
 * @example const limiter = instrument(createLimiter(spec), { rule: "api" });
 */
export function instrument<T extends Limiter | RateLimiterService<Store>>(
  target: T,
  options: InstrumentOptions = {},
): T {
  if (target instanceof RateLimiterService) {
    const metrics = new DecisionMetrics(options.store ?? storeKind(target.store), options.meter);
    // Label values only from the service's own rules: a caller-chosen name is one "_OTHER".
    const label = (rule: string) => (target.getRule(rule) === undefined ? OTHER_RULE : rule);
    const check: RateLimiterService<Store>["check"] = (rule, key, opts) =>
      measured(metrics, label(rule), () => target.check(rule, key, opts));
    return passThrough(target, { check }) as T;
  }
  const limiter = target as Limiter;
  const rule = options.rule ?? "default";
  const metrics = new DecisionMetrics(options.store ?? "unknown", options.meter);
  const tryAcquire: Limiter["tryAcquire"] = (key, cost) => measured(metrics, rule, () => limiter.tryAcquire(key, cost));
  const acquire: Limiter["acquire"] = (key, opts) => measured(metrics, rule, () => limiter.acquire(key, opts));
  return passThrough(limiter, { tryAcquire, acquire }) as T;
}

/** A proxy that answers `overrides` and forwards everything else to `target` (bound, so private fields work). */
function passThrough<T extends object>(target: T, overrides: Record<string, unknown>): T {
  return new Proxy(target, {
    get(obj, property) {
      if (typeof property === "string" && Object.hasOwn(overrides, property)) return overrides[property];
      const value: unknown = Reflect.get(obj, property, obj);
      return typeof value === "function" && property !== "constructor" ? value.bind(obj) : value;
    },
  });
}

/** Options of `instrumentStore`. */
export interface InstrumentStoreOptions extends MetricsOptions {
  /** The `sluice.rule` attribute (default: the service rule or limiter name, "default" for an unnamed limiter). */
  rule?: string;
}

/**
 * Returns a store reporting every decision of every rule bound to it: hand it to limiters,
 * services or middleware in place of `store`. Peeks and refunds are not decisions.
 */
export function instrumentStore<S extends Store>(store: S, options: InstrumentStoreOptions = {}): S {
  const metrics = new DecisionMetrics(options.store ?? storeKind(store), options.meter);
  const bind: Store["bind"] = (binding) => {
    const bound = store.bind(binding);
    // The hook's label (reportedRule): the identity's text would leak `name:` and a spec's JSON.
    const rule = options.rule ?? (binding.identity === undefined ? binding.id : reportedRule(binding.identity));
    const check = (...args: Parameters<BoundRule["check"]>) => {
      if (args[3] !== "check") return bound.check(...args); // peeks and refunds are not decisions
      return measured(metrics, rule, () => bound.check(...args));
    };
    return { check, reset: (key) => bound.reset(key), release: () => bound.release() };
  };
  return passThrough(store, { bind }) as S;
}

/**
 * Middleware options with their decisions reported: the `service` is instrumented, or else the
 * `store` (default: a new MemoryStore) under the rule name `policyName` (or "default").
 *
 * @example app.use(rateLimit(instrumentMiddleware({ spec, policyName: "api" })));
 */
export function instrumentMiddleware<O extends RateLimitOptions<never>>(options: O, metrics: MetricsOptions = {}): O {
  if (options.service !== undefined) return { ...options, service: instrument(options.service, metrics) };
  const policy = options.policyName;
  const rule = typeof policy === "string" ? policy : Array.isArray(policy) ? policy.join(",") : "default";
  const store = instrumentStore(options.store ?? new MemoryStore(), { ...metrics, rule });
  return { ...options, store };
}

/**
 * `decisionMetrics(options)`: an `onDecision` hook (src/limiter.ts) that records every check in
 * OpenTelemetry metrics. It is the simplest way in: give it to `createLimiter`, to a
 * `RateLimiterService` (every rule and tier) or to middleware options, and nothing is wrapped.
 */
import type { DecisionEvent } from "../limiter.ts";
import { DecisionMetrics, type MetricsOptions } from "./metrics.ts";

/** Options of `decisionMetrics`. */
export interface DecisionMetricsOptions extends MetricsOptions {
  /** The `sluice.rule` attribute (default: the service rule, the limiter's name, or "default"). */
  rule?: string;
}

/** The rule name behind a binding id: `rule:<name>[:tier:<tier>]`, `name:<name>`, else "default". */
export function ruleOfId(id: string): string {
  const rule = /^rule:([^:]*)/.exec(id);
  if (rule !== null) return decodeURIComponent(rule[1] as string);
  return id.startsWith("name:") ? id.slice(5) : "default";
}

/**
 * An `onDecision` hook recording checks (not peeks or refunds): `sluice.decisions` by outcome,
 * `sluice.decision.duration`, and `sluice.store.errors` for checks a store rejected.
 *
 * @example new RateLimiterService({ store, onDecision: decisionMetrics({ store: "redis" }) })
 */
export function decisionMetrics(options: DecisionMetricsOptions = {}): (event: DecisionEvent) => void {
  const metrics = new DecisionMetrics(options.store ?? "unknown", options.meter);
  return (event) => {
    if (event.op !== "check") return;
    const rule = options.rule ?? ruleOfId(event.id);
    if (event.decision !== undefined) metrics.decided(rule, event.decision, event.durationMs / 1000);
    else metrics.failed(rule, event.error);
  };
}

/**
 * `decisionMetrics(options)`: an `onDecision` hook (src/limiter.ts) that records every check in
 * OpenTelemetry metrics. It is the simplest way in: give it to `createLimiter`, to a
 * `RateLimiterService` (every rule and tier) or to middleware options, and nothing is wrapped.
 */
import { reportedRule } from "../core/identity.ts";
import type { DecisionEvent } from "../limiter.ts";
import { DecisionMetrics, type MetricsOptions } from "./metrics.ts";

/** Options of `decisionMetrics`. */
export interface DecisionMetricsOptions extends MetricsOptions {
  /** The `sluice.rule` attribute (default: the service rule, the limiter's name, or "default"). */
  rule?: string;
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
    const rule = options.rule ?? reportedRule(event.identity);
    if (event.decision !== undefined) metrics.decided(rule, event.decision, event.durationMs / 1000);
    else metrics.failed(rule, event.error);
  };
}

/**
 * `ShouldRateLimit` as envoyproxy/ratelimit answers it, decided by sluice: each descriptor is
 * matched against the config, `replaces` drops the limits it names, and every counted
 * descriptor becomes one item of a `checkAll`, so a request over any enforced limit consumes
 * nothing. Shadow-mode descriptors are counted when the request passes and never deny it.
 */

import type { Decision } from "../../algorithms/decision.ts";
import { type EnvoyMatch, matchDescriptor } from "../../config/envoy/match.ts";
import { type EnvoyConfig, type EnvoyRateLimit, type EnvoyUnit, UNIT_MS } from "../../config/envoy/model.ts";
import type { Clock } from "../../core/clock.ts";
import type { Store } from "../../core/store.ts";
import type { GroupCheck, RateLimiterService } from "../../service.ts";
import type { EnvoyMetrics } from "./metrics.ts";
import { type OverridePool, overrideMatch } from "./override.ts";
import type { RlsRequest, RlsResponse, RlsStatus } from "./wire.ts";

/** What answering needs: the config, the service holding its rules, a clock, metrics, the override rules. */
export interface EnvoyState {
  config: EnvoyConfig;
  service: RateLimiterService<Store>;
  clock: Clock;
  metrics: EnvoyMetrics;
  overrides: OverridePool;
}

const MAX_UINT32 = 4_294_967_295;
const UNIT_NAMES: Record<EnvoyUnit, string> = {
  second: "SECOND",
  minute: "MINUTE",
  hour: "HOUR",
  day: "DAY",
  month: "MONTH",
  year: "YEAR",
};

interface Counted {
  index: number;
  match: EnvoyMatch;
  limit: EnvoyRateLimit;
  cost: number;
}

function duration(ms: number): { seconds: number; nanos: number } {
  const whole = Math.max(0, Math.ceil(ms));
  return { seconds: Math.floor(whole / 1000), nanos: (whole % 1000) * 1_000_000 };
}

function status(limit: EnvoyRateLimit, ok: boolean, remaining: number, resetMs: number): RlsStatus {
  return {
    code: ok ? "OK" : "OVER_LIMIT",
    current_limit: {
      requests_per_unit: limit.requestsPerUnit,
      unit: UNIT_NAMES[limit.unit as EnvoyUnit],
      name: limit.name,
    },
    limit_remaining: Math.min(MAX_UINT32, Math.max(0, remaining)),
    duration_until_reset: duration(resetMs),
  };
}

const OK_UNLIMITED: RlsStatus = {
  code: "OK",
  current_limit: null,
  limit_remaining: MAX_UINT32,
  duration_until_reset: null,
};
const OK_NO_LIMIT: RlsStatus = { code: "OK", current_limit: null, limit_remaining: 0, duration_until_reset: null };

/** Answers one request; rejects only when the store fails under the `throw` policy. */
export async function shouldRateLimit(state: EnvoyState, request: RlsRequest): Promise<RlsResponse> {
  const { config, service, metrics } = state;
  const requestHits = request.hits_addend > 0 ? request.hits_addend : 1;
  const matches = request.descriptors.map((d) =>
    d.limit !== null && d.limit !== undefined
      ? overrideMatch(state, request.domain, d.entries, d.limit)
      : matchDescriptor(config, request.domain, d.entries),
  );
  let replaced: Set<string> | undefined; // most configs replace nothing: no set then
  for (const m of matches) for (const name of m?.node.limit?.replaces ?? []) (replaced ??= new Set<string>()).add(name);

  const statuses: RlsStatus[] = new Array(matches.length).fill(OK_NO_LIMIT);
  const enforced: Counted[] = [];
  const shadow: Counted[] = [];
  const reports: Counted[] = [];
  let blocked = false; // a `requests_per_unit: 0` limit denies the whole request by itself
  matches.forEach((match, index) => {
    const limit = match?.node.limit;
    if (match === undefined || limit === undefined || (limit.name !== "" && replaced?.has(limit.name))) return;
    const wrapped = request.descriptors[index]?.hits_addend;
    const cost = wrapped !== null && wrapped !== undefined ? wrapped.value : requestHits;
    metrics.add(match, "total_hits", cost);
    if (limit.unlimited) {
      statuses[index] = OK_UNLIMITED;
      return;
    }
    const counted = { index, match, limit, cost };
    if (limit.spec === undefined) {
      // Nothing may pass: denied without a counter, reset at the end of the unit's window.
      const w = UNIT_MS[limit.unit as EnvoyUnit];
      const over = cost > 0;
      statuses[index] = status(limit, !over || match.node.shadowMode, 0, w - (state.clock.now() % w));
      if (over) countOver(state, counted);
      if (over && !match.node.shadowMode) blocked = true;
    } else if (cost === 0) reports.push(counted);
    else (match.node.shadowMode ? shadow : enforced).push(counted);
  });

  for (const c of enforced) ensureRule(service, c.limit);
  for (const c of shadow) ensureRule(service, c.limit);
  for (const c of reports) ensureRule(service, c.limit);
  const item = (c: Counted, cost = c.cost): GroupCheck => ({ rule: c.limit.rule, key: c.match.key, cost });
  const enforcedDecisions = blocked
    ? await Promise.all(enforced.map((c) => service.peek(c.limit.rule, c.match.key, { cost: c.cost })))
    : await service.checkAll(enforced.map((c) => item(c)));
  const passed = !blocked && enforcedDecisions.every((d) => d.allowed);
  // Each await costs a turn of the microtask queue even when empty: skip the usual empty ones.
  const shadowDecisions =
    shadow.length === 0
      ? []
      : await Promise.all(
          shadow.map((c) =>
            (passed ? service.check : service.peek).call(service, c.limit.rule, c.match.key, { cost: c.cost }),
          ),
        );
  // hits_addend 0 only looks: what one more unit would leave, plus the unit itself.
  const reportDecisions =
    reports.length === 0
      ? []
      : await Promise.all(reports.map((c) => service.peek(c.limit.rule, c.match.key, { cost: 1 })));

  const settle = (c: Counted, d: Decision, report = false) => {
    const ok = report || d.allowed || c.match.node.shadowMode;
    const remaining = report ? (d.allowed ? d.remaining + 1 : d.remaining) : d.remaining;
    statuses[c.index] = status(
      c.limit,
      ok,
      remaining,
      Math.max(d.resetMs, Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : 0),
    );
    if (report) return;
    if (d.allowed) metrics.add(c.match, "within_limit", c.cost);
    else countOver(state, c);
  };
  for (const [i, c] of enforced.entries()) settle(c, enforcedDecisions[i] as Decision);
  for (const [i, c] of shadow.entries()) settle(c, shadowDecisions[i] as Decision);
  for (const [i, c] of reports.entries()) settle(c, reportDecisions[i] as Decision, true);

  const overall = statuses.some((s) => s.code === "OVER_LIMIT") ? "OVER_LIMIT" : "OK";
  metrics.calls[overall]++;
  return { overall_code: overall, statuses };
}

/**
 * Registers a descriptor's rule on its first use: a rule costs ~2.6 KB (its limiter and compiled
 * algorithm), so a 20,000-descriptor config held 51 MB of rules at start for descriptors that
 * might never be called. Reloads update or remove the rules in use (envoy-service.ts).
 */
function ensureRule(service: RateLimiterService<Store>, limit: EnvoyRateLimit): void {
  if (!service.hasRule(limit.rule)) service.addRule(limit.rule, limit.spec as NonNullable<EnvoyRateLimit["spec"]>);
}

function countOver(state: EnvoyState, c: Counted): void {
  state.metrics.add(c.match, "over_limit", c.cost);
  if (c.match.node.shadowMode) state.metrics.add(c.match, "shadow_mode", c.cost);
}

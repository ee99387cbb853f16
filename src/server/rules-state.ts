/**
 * Applying a validated rules file to the running service: new rules are added, changed ones
 * updated in place (state that still fits is kept), missing ones removed.
 */
import type { RulesConfig } from "../config/rules-file.ts";
import { type RateLimiterService, type RuleInfo, type Store, validateRule } from "../index.ts";

/** What an apply changed. */
export interface ApplyResult {
  added: string[];
  updated: string[];
  removed: string[];
}

/** What a step of {@link applySteps} did: one rule of the config, or `"removing"` once, before the removals. */
export type ApplyStep = "rule" | "removing" | "removed";

function fingerprint(specs: RuleInfo["specs"], tiers: RuleInfo["tiers"], ban: unknown): string {
  return JSON.stringify([specs, tiers, ban ?? null]);
}

/**
 * Applies `config` one rule per step (a reload of 20,000 Envoy descriptors runs them in slices,
 * src/config/envoy/sliced.ts): first every rule of the config is added or updated, then
 * `"removing"` (a caller switches to the config that names the new rules here, before any old
 * rule goes), then the rules the config no longer names are removed.
 */
export function* applySteps(
  service: RateLimiterService<Store>,
  config: RulesConfig,
): Generator<ApplyStep, ApplyResult, undefined> {
  const result: ApplyResult = { added: [], updated: [], removed: [] };
  const wanted = new Set<string>();
  for (const rule of config.rules) {
    wanted.add(rule.name);
    const tiers = Object.fromEntries(Object.entries(rule.tiers).map(([t, s]) => [t, validateRule(s)]));
    const info = service.getRule(rule.name);
    const options = { tiers: rule.tiers, ...(rule.ban === undefined ? {} : { ban: rule.ban }) };
    if (info === undefined) {
      service.addRule(rule.name, rule.spec, options);
      result.added.push(rule.name);
    } else if (
      fingerprint(info.specs, info.tiers, info.ban) !== fingerprint(validateRule(rule.spec), tiers, rule.ban)
    ) {
      service.updateRule(rule.name, rule.spec, options);
      result.updated.push(rule.name);
    } // else unchanged: leave it (and its state) alone
    yield "rule";
  }
  yield "removing";
  for (const info of service.rules()) {
    if (!wanted.has(info.name)) {
      service.removeRule(info.name);
      result.removed.push(info.name);
      yield "removed";
    }
  }
  return result;
}

/** Applies `config` (already validated by `parseRules`, so no step can fail half-way) in one go. */
export function applyConfig(service: RateLimiterService<Store>, config: RulesConfig): ApplyResult {
  const steps = applySteps(service, config);
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

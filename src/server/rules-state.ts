/**
 * Applying a validated rules file to the running service: new rules are added, changed ones
 * updated in place (state that still fits is kept), missing ones removed.
 */
import type { RulesConfig } from "../config/rules-file.ts";
import { type RateLimiterService, type Store, validateRule } from "../index.ts";

/** What an apply changed. */
export interface ApplyResult {
  added: string[];
  updated: string[];
  removed: string[];
}

/** Applies `config` (already validated by `parseRules`, so no step can fail half-way). */
export function applyConfig(service: RateLimiterService<Store>, config: RulesConfig): ApplyResult {
  const result: ApplyResult = { added: [], updated: [], removed: [] };
  const wanted = new Set(config.rules.map((r) => r.name));
  const current = new Map(
    service.rules().map((info) => [info.name, JSON.stringify([info.specs, info.tiers, info.ban ?? null])]),
  );
  for (const rule of config.rules) {
    const tiers = Object.fromEntries(Object.entries(rule.tiers).map(([t, s]) => [t, validateRule(s)]));
    const next = JSON.stringify([validateRule(rule.spec), tiers, rule.ban ?? null]);
    if (current.get(rule.name) === next) continue; // unchanged: leave it (and its state) alone
    if (service.hasRule(rule.name)) {
      service.updateRule(rule.name, rule.spec, {
        tiers: rule.tiers,
        ...(rule.ban === undefined ? {} : { ban: rule.ban }),
      });
      result.updated.push(rule.name);
    } else {
      service.addRule(rule.name, rule.spec, {
        tiers: rule.tiers,
        ...(rule.ban === undefined ? {} : { ban: rule.ban }),
      });
      result.added.push(rule.name);
    }
  }
  for (const info of service.rules()) {
    if (!wanted.has(info.name)) {
      service.removeRule(info.name);
      result.removed.push(info.name);
    }
  }
  return result;
}

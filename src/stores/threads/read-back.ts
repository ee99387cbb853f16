/**
 * What a key read back from the summary is decided on: each of its rows dominates the key's own
 * record (admits no more), so the most permissive row is the closest to it. Its ban state is
 * marked read back (core/ban.ts): over-counted, it counts strikes as a chain from then on.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { markReadBack } from "../../core/ban.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { banState, type CompiledRule, type RuleRecord } from "../../core/rule.ts";

/** The row of `rows` that admits the most for a check of `cost` at `now`, its ban state marked read back. */
export function mostPermissive(rule: CompiledRule, rows: RuleRecord[], now: number, cost: number): RuleRecord {
  let best = rows[0];
  let bestDecision = decideRule(rule, best, now, cost, "peek");
  for (let i = 1; i < rows.length; i++) {
    const d = decideRule(rule, rows[i], now, cost, "peek");
    if (permits(d, bestDecision)) {
      best = rows[i];
      bestDecision = d;
    }
  }
  markReadBack(banState(rule, best));
  return best;
}

/** Whether decision `a` admits more than `b` (allowed first, then more remaining, then sooner). */
function permits(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return a.allowed;
  if (a.remaining !== b.remaining) return a.remaining > b.remaining;
  return a.retryAfterMs < b.retryAfterMs;
}

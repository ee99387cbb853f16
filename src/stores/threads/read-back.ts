/**
 * What a key read back from the summary is decided on: each of its rows dominates the key's own
 * record (admits no more), so the most permissive row is the closest to it. Its ban state is
 * marked read back (core/ban.ts): over-counted, it counts strikes as a chain from then on.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { TokenBucketSpec } from "../../algorithms/specs.ts";
import type { TokenBucketState } from "../../algorithms/token-bucket.ts";
import { markReadBack } from "../../core/ban.ts";
import { decideRule } from "../../core/decide-rule.ts";
import { banState, type CompiledRule, memberState, type RuleRecord } from "../../core/rule.ts";

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
  owedNow(rule, best, now);
  return best;
}

/**
 * A token bucket read back from a cell is empty until an instant past `now` (summary-codec.ts
 * `readMember`), which its step and refund read as "no time passed": a refund there gives a
 * whole unit back at once. The key's own record owes that backlog as a balance below zero now
 * (a penalty's, or the summary's over-count), which a refund only reduces. So the backlog is
 * written as that debt, at `now`: the same instant full again, and never more permissive.
 */
function owedNow(rule: CompiledRule, record: RuleRecord, now: number): void {
  rule.members.forEach((m, i) => {
    if (m.kind !== "token-bucket") return;
    const state = memberState(rule, record, i) as TokenBucketState;
    if (!(state.t > now)) return;
    state.b -= (state.t - now) * (m.spec as TokenBucketSpec).refillPerSecond;
    state.t = now;
  });
}

/** Whether decision `a` admits more than `b` (allowed first, then more remaining, then sooner). */
function permits(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return a.allowed;
  if (a.remaining !== b.remaining) return a.remaining > b.remaining;
  return a.retryAfterMs < b.retryAfterMs;
}

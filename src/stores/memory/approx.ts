/**
 * A key read back from a summary (MemoryStore, past `maxKeys`): what the summary held for it is
 * shared with other keys, so the key decides on the summary's estimate plus what it took since
 * (`own`, exact), and per rate-based member the backlog its admissions added on top.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import type { CompiledRule, RuleRecord } from "../../core/rule.ts";
import { isRate, unitMs } from "../compact/summary-codec.ts";

/**
 * A key read back from a summary: the summary's estimate plus `own`, what it took since (exact,
 * started fresh), and per rate-based member the backlog (ms) its admissions added since.
 */
export class Approx {
  /**
   * Per member, for rate-based ones: [debt, base] pairs: the backlog (ms) its admissions added
   * since the read-back, and the summary's instant at the read-back (NaN until read). Empty for
   * rules with no rate-based member.
   */
  readonly rate: number[];
  constructor(
    readonly own: RuleRecord,
    readonly h1: number,
    readonly h2: number,
    rule: CompiledRule,
    /**
     * True for a key's own record read back from a compact slot that held a bound of it, not
     * the state itself (dense-codec.ts: a log of ≥ 2 entries at its newest, an arrival time
     * rounded up, a token bucket read back empty earlier): no summary is involved, but its
     * decisions over-count by a little, so they say `approximate` until `own` is fresh.
     */
    readonly bound = false,
  ) {
    this.rate = rule.members.some(isRate) ? rule.members.flatMap(() => [0, Number.NaN]) : NO_RATE;
  }

  /** Whether everything the summary held for the key has stopped mattering by `t`: `own` is then its record. */
  settled(t: number): boolean {
    const rate = this.rate;
    for (let i = 0; i < rate.length; i += 2) {
      const base = rate[i + 1] as number;
      if (!Number.isNaN(base) && base + Math.max(0, rate[i] as number) > t) return false;
    }
    return true;
  }
}

const NO_RATE: number[] = [];

/**
 * Adds `cost` units to a read-back key's debt on each rate-based member (`Approx.rate`): the
 * backlog an admission or a penalty puts on top of the summary's.
 */
export function oweUnits(rule: CompiledRule, rate: number[], cost: number): void {
  rule.members.forEach((m: Algorithm, i) => {
    if (isRate(m)) rate[2 * i] = (rate[2 * i] as number) + cost * unitMs(m);
  });
}

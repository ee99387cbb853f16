/**
 * What the status page shows per rule tier (a rule's own spec is the tier `null`): admitted,
 * denied and failed per second (a {@link Timeline}), totals since the tier appeared, and the
 * keys denied most right now (a {@link HeavyHitters}), as rates. All fixed-size, so memory never
 * grows with keys or time; and bounded in the number of tiers too: a tier's per-second figures
 * and its sketch of denied keys (about 15 KB) are kept for at most {@link MAX_DETAILED_TIERS}
 * tiers at once, so a rules file of 20,000 rules, each called, does not hold 47 KB per tier
 * (608 MB for 10,000 rules before this bound). Past it, a tier gets its details once another
 * has been idle for the whole window (its figures were all zero); its totals are always kept.
 */
import type { Clock } from "../core/clock.ts";
import { HeavyHitters } from "./heavy-hitters.ts";
import { type Outcome, type Series, Timeline } from "./timeline.ts";

/** Most tiers with per-second figures and a sketch of denied keys at once. */
export const MAX_DETAILED_TIERS = 1000;

/** Sketch of a tier's denied keys: 256 × 4 counters (over-count at most e/256 ≈ 1% of its denials, w.h.p.). */
const SKETCH = { width: 256, depth: 4 } as const;

interface TierDetail {
  timeline: Timeline;
  /** Made on the tier's first denial with a key. */
  denied: HeavyHitters | undefined;
  /** The second of the tier's last decision. */
  last: number;
}

interface TierActivity {
  /** Decisions since the tier appeared: allowed, denied, failure. */
  totals: [number, number, number];
  /** Per-second figures and denied keys, while the tier holds one of the bounded places. */
  detail: TierDetail | undefined;
}

/** One key among the most denied, with its recent denial rate (never a count that reads as a total). */
export interface DeniedKey {
  key: string;
  /** Denials per minute, weighted towards the last 30 s (a 30 s half-life). */
  perMinute: number;
}

/** One rule tier's view for the status page. */
export interface TierView {
  /** The tier's name, or null for the rule's own spec. */
  tier: string | null;
  /** Decisions since this tier appeared (the service started, or a reload added it). */
  totals: { allowed: number; denied: number; failure: number };
  /** Decisions per second over the last 300 s. */
  series: Series;
  /** The keys denied most now, largest rate first. */
  topDenied: DeniedKey[];
}

/** A rule and the tiers it has now (what {@link Activity.retain} keeps). */
export interface RuleTiers {
  name: string;
  tiers: Record<string, unknown>;
}

/** Activity of every rule tier. */
export class Activity {
  readonly #clock: Clock;
  readonly #seconds: number;
  readonly #maxDetailed: number;
  /** rule → tier (null: the rule's own spec) → activity. */
  readonly #rules = new Map<string, Map<string | null, TierActivity>>();
  /** Tiers holding details now. */
  readonly #detailed = new Set<TierActivity>();
  /** The second idle details were last looked for (at most once a second). */
  #swept = Number.NEGATIVE_INFINITY;

  constructor(clock: Clock, seconds = 300, maxDetailed = MAX_DETAILED_TIERS) {
    this.#clock = clock;
    this.#seconds = seconds;
    this.#maxDetailed = maxDetailed;
  }

  #of(rule: string, tier: string | null): TierActivity {
    let tiers = this.#rules.get(rule);
    if (tiers === undefined) {
      tiers = new Map();
      this.#rules.set(rule, tiers);
    }
    let a = tiers.get(tier);
    if (a === undefined) {
      a = { totals: [0, 0, 0], detail: undefined };
      tiers.set(tier, a);
    }
    return a;
  }

  /** `a`'s details, made if a place is free (or freed by a tier idle for the whole window). */
  #detailOf(a: TierActivity, now: number): TierDetail | undefined {
    if (a.detail !== undefined) return a.detail;
    if (this.#detailed.size >= this.#maxDetailed && now > this.#swept) {
      this.#swept = now;
      for (const other of this.#detailed) {
        if ((other.detail as TierDetail).last <= now - this.#seconds) {
          other.detail = undefined;
          this.#detailed.delete(other);
        }
      }
    }
    if (this.#detailed.size >= this.#maxDetailed) return undefined;
    a.detail = { timeline: new Timeline(this.#seconds), denied: undefined, last: now };
    this.#detailed.add(a);
    return a.detail;
  }

  /** Counts one decision of `rule`'s `tier`; a denied one counts for `key` (when known) among the most denied. */
  record(rule: string, tier: string | null, outcome: Outcome, key?: string): void {
    const a = this.#of(rule, tier);
    a.totals[outcome === "allowed" ? 0 : outcome === "denied" ? 1 : 2]++;
    const now = Math.floor(this.#clock.now() / 1000);
    const detail = this.#detailOf(a, now);
    if (detail === undefined) return;
    detail.last = now;
    detail.timeline.record(now, outcome);
    if (outcome === "denied" && key !== undefined) {
      detail.denied ??= new HeavyHitters({ clock: this.#clock, ...SKETCH });
      detail.denied.add(key);
    }
  }

  /** The page's view of `rule`'s `tier` now. */
  view(rule: string, tier: string | null): TierView {
    const a = this.#rules.get(rule)?.get(tier);
    const now = Math.floor(this.#clock.now() / 1000);
    const [allowed, denied, failure] = a?.totals ?? [0, 0, 0];
    const detail = a?.detail;
    const sketch = detail?.denied;
    const topDenied =
      sketch === undefined
        ? []
        : sketch.top().map((h) => ({ key: h.key, perMinute: Math.round(sketch.perMinute(h.count) * 10) / 10 }));
    const series = (detail?.timeline ?? new Timeline(this.#seconds)).series(now);
    return { tier, totals: { allowed, denied, failure }, series, topDenied };
  }

  /** Drops rules and tiers no longer in the config (a reload removed them). */
  retain(rules: Iterable<RuleTiers>): void {
    const keep = new Map<string, Set<string | null>>();
    for (const r of rules) keep.set(r.name, new Set([null, ...Object.keys(r.tiers)]));
    for (const [rule, tiers] of this.#rules) {
      const kept = keep.get(rule);
      for (const [tier, a] of tiers) {
        if (kept?.has(tier) === true) continue;
        this.#detailed.delete(a);
        tiers.delete(tier);
      }
      if (kept === undefined) this.#rules.delete(rule);
    }
  }
}

/**
 * What the status page shows per rule tier (a rule's own spec is the tier `null`): admitted,
 * denied and failed per second (a {@link Timeline}), totals since the tier appeared, and the
 * keys denied most right now (a {@link HeavyHitters}), as rates. All fixed-size, so memory grows
 * with the rules and tiers in the config, never with keys or time.
 */
import type { Clock } from "../core/clock.ts";
import { HeavyHitters } from "./heavy-hitters.ts";
import { type Outcome, type Series, Timeline } from "./timeline.ts";

interface TierActivity {
  timeline: Timeline;
  denied: HeavyHitters;
  /** Decisions since the tier appeared: allowed, denied, failure. */
  totals: [number, number, number];
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
  /** rule → tier (null: the rule's own spec) → activity. */
  readonly #rules = new Map<string, Map<string | null, TierActivity>>();

  constructor(clock: Clock, seconds = 300) {
    this.#clock = clock;
    this.#seconds = seconds;
  }

  #of(rule: string, tier: string | null): TierActivity {
    let tiers = this.#rules.get(rule);
    if (tiers === undefined) {
      tiers = new Map();
      this.#rules.set(rule, tiers);
    }
    let a = tiers.get(tier);
    if (a === undefined) {
      a = {
        timeline: new Timeline(this.#seconds),
        denied: new HeavyHitters({ clock: this.#clock }),
        totals: [0, 0, 0],
      };
      tiers.set(tier, a);
    }
    return a;
  }

  /** Counts one decision of `rule`'s `tier`; a denied one counts for `key` (when known) among the most denied. */
  record(rule: string, tier: string | null, outcome: Outcome, key?: string): void {
    const a = this.#of(rule, tier);
    a.timeline.record(Math.floor(this.#clock.now() / 1000), outcome);
    a.totals[outcome === "allowed" ? 0 : outcome === "denied" ? 1 : 2]++;
    if (outcome === "denied" && key !== undefined) a.denied.add(key);
  }

  /** The page's view of `rule`'s `tier` now. */
  view(rule: string, tier: string | null): TierView {
    const a = this.#rules.get(rule)?.get(tier);
    const now = Math.floor(this.#clock.now() / 1000);
    if (a === undefined) {
      return {
        tier,
        totals: { allowed: 0, denied: 0, failure: 0 },
        series: new Timeline(this.#seconds).series(now),
        topDenied: [],
      };
    }
    const [allowed, denied, failure] = a.totals;
    const topDenied = a.denied.top().map((h) => ({
      key: h.key,
      perMinute: Math.round(a.denied.perMinute(h.count) * 10) / 10,
    }));
    return { tier, totals: { allowed, denied, failure }, series: a.timeline.series(now), topDenied };
  }

  /** Drops rules and tiers no longer in the config (a reload removed them). */
  retain(rules: Iterable<RuleTiers>): void {
    const keep = new Map<string, Set<string | null>>();
    for (const r of rules) keep.set(r.name, new Set([null, ...Object.keys(r.tiers)]));
    for (const [rule, tiers] of this.#rules) {
      const kept = keep.get(rule);
      if (kept === undefined) this.#rules.delete(rule);
      else for (const tier of tiers.keys()) if (!kept.has(tier)) tiers.delete(tier);
    }
  }
}

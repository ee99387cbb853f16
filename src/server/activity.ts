/**
 * What the status page shows per rule: admitted/denied per second (a {@link Timeline}) and
 * the keys denied most right now (a {@link HeavyHitters}). Both are fixed-size, so memory
 * grows with the number of rules in the config, never with keys or time.
 */
import type { Clock } from "../core/clock.ts";
import { type HeavyHitter, HeavyHitters } from "./heavy-hitters.ts";
import { type Series, Timeline } from "./timeline.ts";

interface RuleActivity {
  timeline: Timeline;
  denied: HeavyHitters;
}

/** One rule's view for the status page. */
export interface RuleView {
  series: Series;
  /** Keys denied most in the last minute or so (decayed counts). */
  topDenied: HeavyHitter[];
}

/** Activity of every rule. */
export class Activity {
  readonly #clock: Clock;
  readonly #seconds: number;
  readonly #rules = new Map<string, RuleActivity>();

  constructor(clock: Clock, seconds = 300) {
    this.#clock = clock;
    this.#seconds = seconds;
  }

  #of(rule: string): RuleActivity {
    let a = this.#rules.get(rule);
    if (a === undefined) {
      a = { timeline: new Timeline(this.#seconds), denied: new HeavyHitters({ clock: this.#clock }) };
      this.#rules.set(rule, a);
    }
    return a;
  }

  /** Counts one decision; a denied one counts for `key` (when known) in the heavy hitters. */
  record(rule: string, allowed: boolean, key?: string): void {
    const a = this.#of(rule);
    a.timeline.record(Math.floor(this.#clock.now() / 1000), allowed);
    if (!allowed && key !== undefined) a.denied.add(key);
  }

  /** The page's view of `rule` now. */
  view(rule: string): RuleView {
    const a = this.#rules.get(rule);
    const now = Math.floor(this.#clock.now() / 1000);
    if (a === undefined) return { series: new Timeline(this.#seconds).series(now), topDenied: [] };
    return { series: a.timeline.series(now), topDenied: a.denied.top() };
  }

  /** Drops rules no longer in the config (a reload removed them). */
  retain(rules: Iterable<string>): void {
    const keep = new Set(rules);
    for (const name of this.#rules.keys()) if (!keep.has(name)) this.#rules.delete(name);
  }
}

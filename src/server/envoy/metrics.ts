/**
 * Per-descriptor counters of the Envoy API, named like envoyproxy/ratelimit's stats
 * (`total_hits`, `over_limit`, `shadow_mode`, `within_limit`, counted in hits) and labelled by
 * descriptor path. Paths come from the config, so the label set is bounded, except for
 * descriptors with `detailed_metric`, which ask for one series per request value: those are
 * bounded too. The first {@link DEFAULT_MAX_DETAILED_SERIES} distinct detailed paths get series
 * of their own; later values are folded into their descriptor's own path (the series it would
 * have without `detailed_metric`). First come rather than a moving top-N: a Prometheus counter
 * must never go backwards, and a series that left a top list and came back would restart at 0.
 * No client can grow /metrics past 4 × (config paths + the bound) series.
 */
import type { EnvoyMatch } from "../../config/envoy/match.ts";

/** Default most `detailed_metric` series (distinct request values) with a series of their own. */
export const DEFAULT_MAX_DETAILED_SERIES = 1000;

const STATS = ["total_hits", "over_limit", "shadow_mode", "within_limit"] as const;

/** One of the per-path counters. */
export type EnvoyStat = (typeof STATS)[number];

const HELP: Record<EnvoyStat, string> = {
  total_hits: "Hits on an Envoy descriptor (hits_addend summed), by descriptor path.",
  over_limit: "Hits over an Envoy descriptor's limit (shadow mode included), by descriptor path.",
  shadow_mode: "Over-limit hits let through because the descriptor is in shadow_mode, by descriptor path.",
  within_limit: "Hits within an Envoy descriptor's limit, by descriptor path.",
};

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

/** The counters, with their Prometheus text. */
export class EnvoyMetrics {
  readonly #paths = new Map<string, Record<EnvoyStat, number>>();
  readonly #maxDetailed: number;
  /** Detailed paths given a series of their own so far. */
  #detailed = 0;
  /** ShouldRateLimit calls answered, by overall code. */
  readonly calls = { OK: 0, OVER_LIMIT: 0 };

  constructor(maxDetailedSeries = DEFAULT_MAX_DETAILED_SERIES) {
    this.#maxDetailed = maxDetailedSeries;
  }

  /** Adds `hits` to `stat` of the series `match` counts under. */
  add(match: EnvoyMatch, stat: EnvoyStat, hits: number): void {
    let cell = this.#paths.get(match.stat);
    if (cell === undefined) {
      let path = match.stat;
      if (match.node.detailedMetric && path !== match.node.path) {
        if (this.#detailed >= this.#maxDetailed) path = match.node.path;
        else this.#detailed++;
      }
      cell = this.#paths.get(path);
      if (cell === undefined) {
        cell = { total_hits: 0, over_limit: 0, shadow_mode: 0, within_limit: 0 };
        this.#paths.set(path, cell);
      }
    }
    cell[stat] += hits;
  }

  /** Series held now (each rendered once per stat). */
  get series(): number {
    return this.#paths.size;
  }

  /** The counters of one path (zeros when never hit). */
  get(path: string): Readonly<Record<EnvoyStat, number>> {
    return this.#paths.get(path) ?? { total_hits: 0, over_limit: 0, shadow_mode: 0, within_limit: 0 };
  }

  /** Prometheus exposition lines (with a trailing newline), or "" before the first call. */
  render(): string {
    const out: string[] = [
      "# HELP sluice_envoy_requests_total ShouldRateLimit calls, by overall code.",
      "# TYPE sluice_envoy_requests_total counter",
      `sluice_envoy_requests_total{code="OK"} ${this.calls.OK}`,
      `sluice_envoy_requests_total{code="OVER_LIMIT"} ${this.calls.OVER_LIMIT}`,
    ];
    for (const stat of STATS) {
      out.push(`# HELP sluice_envoy_${stat}_total ${HELP[stat]}`, `# TYPE sluice_envoy_${stat}_total counter`);
      for (const [path, cell] of this.#paths)
        out.push(`sluice_envoy_${stat}_total{path="${escapeLabel(path)}"} ${cell[stat]}`);
    }
    return `${out.join("\n")}\n`;
  }
}

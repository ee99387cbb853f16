/**
 * Per-descriptor counters of the Envoy API, named like envoyproxy/ratelimit's stats
 * (`total_hits`, `over_limit`, `shadow_mode`, `within_limit`, counted in hits) and labelled by
 * descriptor path. Descriptors with `detailed_metric` ask for one path per request value: the
 * first {@link DEFAULT_MAX_DETAILED_SERIES} distinct ones are paths of their own, later values
 * count under their descriptor's own path (the one it would have without `detailed_metric`).
 * Of all those paths, at most `--max-metric-series` (default {@link DEFAULT_MAX_SERIES}), the
 * busiest, have series of their own; the rest count in `path="(other)"` ({@link TopSeries}). So
 * neither a config of 20,000 descriptors nor any client can make /metrics carry more than
 * 4 × (that bound + 1) Envoy series.
 */
import type { EnvoyMatch } from "../../config/envoy/match.ts";
import { DEFAULT_MAX_SERIES, TopSeries } from "../top-series.ts";

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
  readonly #paths: TopSeries<Record<EnvoyStat, number>>;
  readonly #maxDetailed: number;
  /** Detailed paths admitted as paths of their own so far. */
  readonly #detailed = new Set<string>();
  /** ShouldRateLimit calls answered, by overall code. */
  readonly calls = { OK: 0, OVER_LIMIT: 0 };

  constructor(maxDetailedSeries = DEFAULT_MAX_DETAILED_SERIES, maxSeries = DEFAULT_MAX_SERIES) {
    this.#maxDetailed = maxDetailedSeries;
    this.#paths = new TopSeries(maxSeries, () => ({ total_hits: 0, over_limit: 0, shadow_mode: 0, within_limit: 0 }));
  }

  /** Adds `hits` to `stat` of the series `match` counts under. */
  add(match: EnvoyMatch, stat: EnvoyStat, hits: number): void {
    let path = match.stat;
    if (match.node.detailedMetric && path !== match.node.path && !this.#detailed.has(path)) {
      if (this.#detailed.size >= this.#maxDetailed) path = match.node.path;
      else this.#detailed.add(path);
    }
    // Traffic is weighed once per descriptor (its total_hits), not once per stat.
    this.#paths.cell(path, stat === "total_hits" ? Math.max(hits, 1) : 0)[stat] += hits;
  }

  /** Paths with a series of their own now (each rendered once per stat; the folded one not counted). */
  get series(): number {
    return this.#paths.size;
  }

  /** The counters of one path's own series (zeros when it has none). */
  get(path: string): Readonly<Record<EnvoyStat, number>> {
    return this.#paths.get(path) ?? { total_hits: 0, over_limit: 0, shadow_mode: 0, within_limit: 0 };
  }

  /** Prometheus exposition lines (with a trailing newline); the busiest paths are chosen again first. */
  render(): string {
    this.#paths.reselect();
    const out: string[] = [
      "# HELP sluice_envoy_requests_total ShouldRateLimit calls, by overall code.",
      "# TYPE sluice_envoy_requests_total counter",
      `sluice_envoy_requests_total{code="OK"} ${this.calls.OK}`,
      `sluice_envoy_requests_total{code="OVER_LIMIT"} ${this.calls.OVER_LIMIT}`,
    ];
    for (const stat of STATS) {
      out.push(`# HELP sluice_envoy_${stat}_total ${HELP[stat]}`, `# TYPE sluice_envoy_${stat}_total counter`);
      for (const [path, cell] of this.#paths.entries())
        out.push(`sluice_envoy_${stat}_total{path="${escapeLabel(path)}"} ${cell[stat]}`);
    }
    return `${out.join("\n")}\n`;
  }
}

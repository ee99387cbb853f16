/**
 * The service's counters and their Prometheus text exposition (format 0.0.4). Label values are
 * rule names from the config, never request keys; and of those, at most `--max-metric-series`
 * (the busiest) have series of their own, the rest count in `rule="(other)"` ({@link TopSeries}),
 * so a rules file of 20,000 rules does not make every scrape megabytes long.
 */

import type { Decision } from "../algorithms/decision.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { outcomeOf } from "../http/answer.ts";
import { Activity } from "./activity.ts";
import { DEFAULT_MAX_SERIES, TopSeries } from "./top-series.ts";

/** Upper bounds (seconds) of the check-latency histogram buckets. */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

/** Extra gauges supplied at scrape time (store size, rule count...). */
export interface Gauge {
  name: string;
  help: string;
  type: "gauge" | "counter";
  value: number;
}

/** Counters kept by the service. */
export class Metrics {
  /** rule → [allowed, denied, failure]: `failure` counts answers of the store's failure policy (an outage, not a limit). */
  readonly decisions = new Map<string, [number, number, number]>();
  /** The same counts as /metrics exposes them: the busiest rules, the rest folded. */
  readonly #exposed: TopSeries<[number, number, number]>;
  /** Decisions answered by the store's failure policy, and checks that failed on the store. */
  storeErrors = 0;
  /** `${route} ${status}` → count. */
  readonly requests = new Map<string, number>();
  readonly #latency = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  #latencySum = 0;
  #latencyCount = 0;
  reloads = { success: 0, failure: 0 };
  /** 1 when the last reload (or the initial load) succeeded. */
  lastReloadOk = 1;
  /** Epoch seconds of the last reload attempt (initial load included). */
  lastReloadAt = 0;
  /** Per-second counts, totals and most-denied keys per rule tier, for the status page. */
  readonly activity: Activity;

  constructor(clock: Clock = systemClock, maxSeries = DEFAULT_MAX_SERIES) {
    this.activity = new Activity(clock);
    this.#exposed = new TopSeries(maxSeries, () => [0, 0, 0]);
  }

  /**
   * Counts one decision for `rule`'s `tier` (null: its own spec), and, when the limit denied it,
   * `key` among the most limited. An answer of the failure policy is counted apart, allowed or
   * not: an outage is not a denial.
   */
  decision(rule: string, tier: string | null, decision: Decision, key?: string): void {
    let cell = this.decisions.get(rule);
    if (cell === undefined) {
      cell = [0, 0, 0];
      this.decisions.set(rule, cell);
    }
    const outcome = outcomeOf(decision) === "failure" ? "failure" : decision.allowed ? "allowed" : "denied";
    this.activity.record(rule, tier, outcome, key);
    const i = outcome === "allowed" ? 0 : outcome === "denied" ? 1 : 2;
    cell[i]++;
    this.#exposed.cell(rule)[i]++;
  }

  /** Counts one HTTP response. */
  request(route: string, status: number): void {
    const id = `${route} ${status}`;
    this.requests.set(id, (this.requests.get(id) ?? 0) + 1);
  }

  /** Records the duration of one `/v1/check` request. */
  latency(seconds: number): void {
    let i = LATENCY_BUCKETS.findIndex((b) => seconds <= b);
    if (i < 0) i = LATENCY_BUCKETS.length;
    this.#latency[i] = (this.#latency[i] ?? 0) + 1;
    this.#latencySum += seconds;
    this.#latencyCount++;
  }

  /** The exposition text. */
  render(gauges: Gauge[]): string {
    const out: string[] = [];
    const head = (name: string, type: string, help: string) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    head(
      "sluice_decisions_total",
      "counter",
      'Rate-limit decisions, by rule and outcome (allowed, denied; "failure": answered by the store\'s failure policy during an outage).',
    );
    this.#exposed.reselect();
    for (const [rule, [allowed, denied, failure]] of this.#exposed.entries()) {
      out.push(`sluice_decisions_total{rule="${escapeLabel(rule)}",outcome="allowed"} ${allowed}`);
      out.push(`sluice_decisions_total{rule="${escapeLabel(rule)}",outcome="denied"} ${denied}`);
      out.push(`sluice_decisions_total{rule="${escapeLabel(rule)}",outcome="failure"} ${failure}`);
    }
    head(
      "sluice_store_errors_total",
      "counter",
      "Checks the store failed to answer (decided by the failure policy or refused).",
    );
    out.push(`sluice_store_errors_total ${this.storeErrors}`);
    head("sluice_check_duration_seconds", "histogram", "Time to answer a /v1/check request (single or batch).");
    let cumulative = 0;
    LATENCY_BUCKETS.forEach((bound, i) => {
      cumulative += this.#latency[i] ?? 0;
      out.push(`sluice_check_duration_seconds_bucket{le="${bound}"} ${cumulative}`);
    });
    out.push(`sluice_check_duration_seconds_bucket{le="+Inf"} ${this.#latencyCount}`);
    out.push(`sluice_check_duration_seconds_sum ${this.#latencySum}`);
    out.push(`sluice_check_duration_seconds_count ${this.#latencyCount}`);
    head("sluice_http_requests_total", "counter", "HTTP responses, by route and status.");
    for (const [id, count] of this.requests) {
      const [route, status] = id.split(" ");
      out.push(`sluice_http_requests_total{route="${escapeLabel(route ?? "")}",status="${status}"} ${count}`);
    }
    head(
      "sluice_config_reloads_total",
      "counter",
      "Rules-file reloads, by result (a failed reload keeps the last good config).",
    );
    out.push(`sluice_config_reloads_total{result="success"} ${this.reloads.success}`);
    out.push(`sluice_config_reloads_total{result="failure"} ${this.reloads.failure}`);
    head("sluice_config_last_reload_successful", "gauge", "1 if the last load of the rules file succeeded, else 0.");
    out.push(`sluice_config_last_reload_successful ${this.lastReloadOk}`);
    head(
      "sluice_config_last_reload_timestamp_seconds",
      "gauge",
      "When the rules file was last loaded or tried (epoch seconds).",
    );
    out.push(`sluice_config_last_reload_timestamp_seconds ${this.lastReloadAt}`);
    for (const g of gauges) {
      head(g.name, g.type, g.help);
      out.push(`${g.name} ${g.value}`);
    }
    return `${out.join("\n")}\n`;
  }
}

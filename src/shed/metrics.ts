/**
 * What `loadShed` reports: the current limit, requests in flight, and requests shed by
 * priority, as a `stats()` object and as Prometheus text (format 0.0.4). Labels are the
 * configured name and the ten priority levels: cardinality is bounded.
 */
import { PRIORITY_LEVELS } from "./pressure.ts";

/** A snapshot of a load shedder. */
export interface ShedStats {
  /** The limit now (the adaptive one moves; undefined when only the event loop sheds). */
  limit: number | undefined;
  /** Requests admitted and not yet finished. */
  inFlight: number;
  /** Requests admitted since the start. */
  admitted: number;
  /** Requests shed since the start. */
  shed: number;
  /** Requests shed since the start, by priority (index 0–9). */
  shedByPriority: number[];
  /** Priorities at or above this are shed for event-loop pressure (10: none). */
  shedFromPriority: number;
  /** The event loop's last sampled mean delay (ms), when a delay threshold is set. */
  eventLoopDelayMs: number | undefined;
  /** The event loop's last sampled utilization, when a utilization threshold is set. */
  eventLoopUtilization: number | undefined;
}

/** An empty per-priority counter. */
export function priorityCounts(): number[] {
  return new Array<number>(PRIORITY_LEVELS).fill(0);
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

/** The Prometheus text exposition of `stats` for the shedder named `name`. */
export function prometheusText(name: string, stats: ShedStats): string {
  const n = `name="${escapeLabel(name)}"`;
  const lines: string[] = [];
  const metric = (metricName: string, type: string, help: string, rows: [string, number][]) => {
    lines.push(`# HELP ${metricName} ${help}`, `# TYPE ${metricName} ${type}`);
    for (const [labels, value] of rows) lines.push(`${metricName}{${labels}} ${value}`);
  };
  if (stats.limit !== undefined)
    metric("sluice_shed_limit", "gauge", "Requests that may be in flight now.", [[n, stats.limit]]);
  metric("sluice_shed_in_flight", "gauge", "Requests admitted and not yet finished.", [[n, stats.inFlight]]);
  metric("sluice_shed_admitted_total", "counter", "Requests admitted.", [[n, stats.admitted]]);
  metric(
    "sluice_shed_shed_total",
    "counter",
    "Requests shed (answered 503), by priority.",
    stats.shedByPriority.map((count, priority) => [`${n},priority="${priority}"`, count]),
  );
  metric(
    "sluice_shed_shed_from_priority",
    "gauge",
    "Priorities at or above this are shed for event-loop pressure (10: none).",
    [[n, stats.shedFromPriority]],
  );
  return `${lines.join("\n")}\n`;
}

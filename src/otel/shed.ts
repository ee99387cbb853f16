/**
 * `shedMetrics(shed)`: a `loadShed` handle's stats as OpenTelemetry instruments, observed at
 * each collection (no work per request):
 * - `sluice.shed.limit` (gauge, `{request}`): the current limit (absent with no `limit`);
 * - `sluice.shed.in_flight` (up-down counter, `{request}`): requests admitted, not finished;
 * - `sluice.shed.admitted` (counter, `{request}`): requests admitted;
 * - `sluice.shed.shed` (counter, `{request}`): requests shed, by `sluice.priority` (0–9).
 * Every point carries `sluice.shed.name`. Labels are bounded: a name you give, ten priorities.
 */
import type { BatchObservableResult, Meter, Observable } from "@opentelemetry/api";
import type { LoadShedHandle } from "../shed/shedder.ts";
import { globalMeter } from "./metrics.ts";

/** Options of `shedMetrics`. */
export interface ShedMetricsOptions {
  /** Where to record (default: the global MeterProvider's meter named "sluice"). */
  meter?: Meter;
  /** The `sluice.shed.name` attribute (default "default"; give the `name` you gave `loadShed`). */
  name?: string;
}

/**
 * Reports `shed`'s stats on `meter`; returns a function that stops reporting.
 *
 * @example
 * const shed = loadShed({ limit: "adaptive", name: "api" });
 * app.use(shed);
 * shedMetrics(shed, { name: "api" });
 */
export function shedMetrics(shed: LoadShedHandle, options: ShedMetricsOptions = {}): () => void {
  const meter = options.meter ?? globalMeter();
  const base = { "sluice.shed.name": options.name ?? "default" };
  const byPriority = Array.from({ length: 10 }, (_, priority) => ({ ...base, "sluice.priority": priority }));
  const limit = meter.createObservableGauge("sluice.shed.limit", {
    description: "Requests that may be in flight now",
    unit: "{request}",
  });
  const inFlight = meter.createObservableUpDownCounter("sluice.shed.in_flight", {
    description: "Requests admitted and not yet finished",
    unit: "{request}",
  });
  const admitted = meter.createObservableCounter("sluice.shed.admitted", {
    description: "Requests admitted by the load shedder",
    unit: "{request}",
  });
  const shedCount = meter.createObservableCounter("sluice.shed.shed", {
    description: "Requests shed (answered 503), by priority",
    unit: "{request}",
  });
  const observables: Observable[] = [limit, inFlight, admitted, shedCount];
  const observe = (result: BatchObservableResult) => {
    const stats = shed.stats();
    if (stats.limit !== undefined) result.observe(limit, stats.limit, base);
    result.observe(inFlight, stats.inFlight, base);
    result.observe(admitted, stats.admitted, base);
    stats.shedByPriority.forEach((count, priority) => {
      result.observe(shedCount, count, byPriority[priority]);
    });
  };
  meter.addBatchObservableCallback(observe, observables);
  return () => meter.removeBatchObservableCallback(observe, observables);
}

/**
 * `sluice/otel`: OpenTelemetry metrics for limiters, services, stores and middleware, through
 * `@opentelemetry/api` (an optional peer dependency; without an SDK registered it records nothing).
 */
export { type DecisionMetricsOptions, decisionMetrics } from "./hook.ts";
export {
  type InstrumentOptions,
  type InstrumentStoreOptions,
  instrument,
  instrumentMiddleware,
  instrumentStore,
} from "./instrument.ts";
export { DecisionMetrics, type MetricsOptions, storeKind } from "./metrics.ts";
export { type ShedMetricsOptions, shedMetrics } from "./shed.ts";

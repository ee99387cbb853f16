/**
 * Samples the event loop's delay and utilization (`perf_hooks`) every `intervalMs` and reports
 * each sample. The timer is unref'd: a sampler never keeps the process alive.
 */
import { type IntervalHistogram, monitorEventLoopDelay, performance } from "node:perf_hooks";

/** One sample: the mean event-loop delay (ms, beyond the monitor's own resolution) and the utilization, both since the last sample. */
export interface LoopSample {
  delayMs: number;
  utilization: number;
}

/** How finely the delay monitor samples (ms); its own resolution is subtracted from the mean, as @fastify/under-pressure does. */
const RESOLUTION_MS = 10;

/** Starts sampling; returns a function that stops it. */
export function sampleEventLoop(intervalMs: number, report: (sample: LoopSample) => void): () => void {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const mean = histogram.mean / 1e6;
    histogram.reset();
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    report({ delayMs: Number.isFinite(mean) ? Math.max(0, mean - RESOLUTION_MS) : 0, utilization });
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    histogram.disable();
  };
}

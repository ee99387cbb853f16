/**
 * Generated traces for `compare --generate`, reproducible from a seed (mulberry32), all on one
 * key. Times are integer ms from 0.
 *   uniform   evenly spaced at the rate (the seed is not needed)
 *   poisson   exponential gaps with mean 1/rate: the usual model of independent clients
 *   bursty    Poisson at 5× the rate during the first window of every five, silent otherwise
 *   boundary  the fixed-window exploit: `limit` requests 1 ms before a window boundary and
 *             `limit` more on it, every other window (the rate is not used)
 */
import { mulberry32 } from "../../core/seeded-random.ts";

/** The generator kinds. */
export const TRACE_KINDS = ["uniform", "poisson", "bursty", "boundary"] as const;

/** One of {@link TRACE_KINDS}. */
export type TraceKind = (typeof TRACE_KINDS)[number];

/** Parameters of a generated trace. */
export interface TraceOptions {
  kind: TraceKind;
  seed: number;
  durationMs: number;
  /** Mean requests per second. */
  rate: number;
  /** Nominal limit and window (the boundary and bursty shapes follow them). */
  limit: number;
  windowMs: number;
}

/** Yields the trace's timestamps in order. */
export function* generateTrace(options: TraceOptions): Generator<number> {
  const { kind, durationMs, rate, limit, windowMs } = options;
  const random = mulberry32(options.seed);
  const gap = () => (-Math.log(1 - random()) * 1000) / rate;
  if (kind === "uniform") {
    const n = Math.floor((rate * durationMs) / 1000);
    for (let i = 0; i < n; i++) yield Math.floor((i * 1000) / rate);
  } else if (kind === "poisson") {
    for (let t = gap(); t < durationMs; t += gap()) yield Math.floor(t);
  } else if (kind === "bursty") {
    const cycle = 5 * windowMs;
    for (let start = 0; start < durationMs; start += cycle) {
      const end = Math.min(start + windowMs, durationMs);
      for (let t = start + gap() / 5; t < end; t += gap() / 5) yield Math.floor(t);
    }
  } else {
    for (let boundary = windowMs; boundary < durationMs; boundary += 2 * windowMs) {
      for (let i = 0; i < limit; i++) yield boundary - 1;
      for (let i = 0; i < limit; i++) yield boundary;
    }
  }
}

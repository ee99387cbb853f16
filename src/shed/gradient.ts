/**
 * The adaptive limit: a gradient algorithm in the manner of Netflix concurrency-limits'
 * Gradient2 and Envoy's adaptive concurrency filter. Trade-off: it needs no capacity figure and
 * follows the service's own latency, but it only reacts to queueing it can see (latency that
 * rises with requests in flight), and it spends a short window now and then at `minLimit` to
 * re-measure the unloaded latency.
 *
 * Pure: a step takes the state, one window's measurements and the instant, and returns the
 * next state. The middleware collects windows (src/shed/window.ts); tests feed synthetic ones.
 */

/** Tuning of the adaptive limit; every field has a default (docs/concurrency.md, "The adaptive limit"). */
export interface GradientOptions {
  /** Lowest limit (default 4): the limit never drops below it, and probes run at it. */
  minLimit?: number;
  /** Highest limit (default 1000). */
  maxLimit?: number;
  /** Limit before the first measurement (default 20). */
  initialLimit?: number;
  /** How much slower than the long-term latency the short-term one may be before the limit shrinks (default 1.3). */
  tolerance?: number;
  /** Weight of each new limit against the old one, in (0, 1] (default 0.2): lower is smoother, slower. */
  smoothing?: number;
  /** How many windows the long-term latency averages over (default 600). */
  longWindow?: number;
  /** Shortest measurement window in ms (default 100). */
  windowMs?: number;
  /** Fewest completed requests in a window (default 10; a window of a quiet service stretches to 10 × `windowMs`). */
  minSamples?: number;
  /** How often the unloaded latency is re-measured at `minLimit`, in ms (default 10 000, jittered ±10%). */
  probeIntervalMs?: number;
}

/** The tuning with every default filled in. */
export type GradientParams = Required<GradientOptions>;

/** The defaults of {@link GradientOptions}. */
export const GRADIENT_DEFAULTS: GradientParams = Object.freeze({
  minLimit: 4,
  maxLimit: 1000,
  initialLimit: 20,
  tolerance: 1.3,
  smoothing: 0.2,
  longWindow: 600,
  windowMs: 100,
  minSamples: 10,
  probeIntervalMs: 10_000,
});

/** One closed measurement window. */
export interface GradientSample {
  /** Mean latency (ms) of the requests that completed in the window. */
  rtt: number;
  /** Most requests in flight at once during the window. */
  maxInFlight: number;
}

/** The adaptive limit's state. */
export interface GradientState {
  /** The current limit (fractional; requests in flight are compared with its floor). */
  limit: number;
  /** Long-term latency (ms): restarted by each probe from the unloaded latency, then an exponential average over `longWindow` windows; 0 before the first probe. */
  longRtt: number;
  /** Windows measured so far. */
  windows: number;
  /** When the next probe starts (ms on the limiter's clock). */
  nextProbeAt: number;
  /** The limit to resume after a probe; undefined outside one. */
  resume: number | undefined;
}

/** The long-term latency decays this much per window when it is more than twice the short-term one. */
const LONG_DECAY = 0.95;

/** The gradient is never below this: the limit at most halves per window, before smoothing. */
const MIN_GRADIENT = 0.5;

/**
 * The state at `now`: probing first (as Envoy starts by measuring its minimum latency), so the
 * long-term latency starts from an unloaded measurement, not from whatever queue the first
 * windows meet; then `initialLimit`.
 */
export function initialGradient(params: GradientParams, now: number): GradientState {
  return {
    limit: params.minLimit,
    longRtt: 0,
    windows: 0,
    nextProbeAt: now + params.probeIntervalMs,
    resume: clamp(params.initialLimit, params.minLimit, params.maxLimit),
  };
}

/** The limit requests are admitted against: the whole part of the state's limit, never below 1. */
export function effectiveLimit(state: GradientState): number {
  return Math.max(1, Math.floor(state.limit));
}

/**
 * The state after one window. `jitter` in [0, 1) spreads probes (±10% of the interval) so a
 * fleet started together does not probe in step.
 *
 * - During a probe (the limit held at `minLimit`, so no queue forms) the window's latency is
 *   the unloaded latency: the long-term average restarts from it and the limit resumes.
 * - Otherwise the gradient `tolerance × long / short`, clamped to [0.5, 1], scales the limit
 *   down while requests queue; while they do not (gradient 1) the limit grows by a headroom of
 *   √limit, to keep looking for capacity (Envoy's headroom; Gradient2 adds its queue size on
 *   every window, which settles higher above capacity, at a higher latency). The result is
 *   smoothed and bounded. A window using under half the limit does not grow it (the app, not
 *   the service, was the limit then).
 */
export function gradientStep(
  state: GradientState,
  sample: GradientSample,
  now: number,
  params: GradientParams,
  jitter: number,
): GradientState {
  if (!(sample.rtt > 0) || !Number.isFinite(sample.rtt)) return state;
  if (state.resume !== undefined) {
    return {
      limit: state.resume,
      longRtt: sample.rtt,
      windows: state.windows + 1,
      nextProbeAt: now + params.probeIntervalMs * (0.9 + 0.2 * jitter),
      resume: undefined,
    };
  }
  const windows = state.windows + 1;
  let longRtt = state.longRtt + (sample.rtt - state.longRtt) * (2 / (params.longWindow + 1));
  // The service got faster (a spike ended): let the long-term latency catch up quickly.
  if (longRtt / sample.rtt > 2) longRtt *= LONG_DECAY;
  let limit = state.limit;
  const appLimited = sample.maxInFlight < limit / 2;
  const gradient = clamp((params.tolerance * longRtt) / sample.rtt, MIN_GRADIENT, 1);
  if (!(appLimited && gradient >= 1)) {
    const target = gradient < 1 ? limit * gradient : limit + Math.sqrt(limit);
    limit = clamp(limit * (1 - params.smoothing) + target * params.smoothing, params.minLimit, params.maxLimit);
  }
  if (now >= state.nextProbeAt) {
    return { limit: params.minLimit, longRtt, windows, nextProbeAt: state.nextProbeAt, resume: limit };
  }
  return { limit, longRtt, windows, nextProbeAt: state.nextProbeAt, resume: undefined };
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

/**
 * The adaptive limit: a gradient algorithm in the manner of Netflix concurrency-limits'
 * Gradient2 and Envoy's adaptive concurrency filter. Trade-off: it needs no capacity figure and
 * follows the service's own latency, but it only reacts to queueing it can see (latency that
 * rises with requests in flight), and it spends a short window now and then at `minLimit` to
 * re-measure the unloaded latency. It cuts at once and grows slowly: every window spent above
 * capacity adds its queue to the latency of everything admitted in it, while a window spent a
 * little below capacity costs only a little goodput.
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
  /** Limit after the first probe, from which it grows 1.5× per window until requests queue (default 4, clamped to [minLimit, maxLimit]). */
  initialLimit?: number;
  /** How much slower than the long-term latency the short-term one may be before the limit shrinks (default 1.2: a queue of a fifth of a service time; 1.3 let a 4-slot pool hold a queue of 2–3, see docs/concurrency.md). */
  tolerance?: number;
  /** Share of the headroom √limit a window that did not queue adds to the limit, in (0, 1] (default 0.2): lower grows slower. */
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
  initialLimit: 4,
  tolerance: 1.2,
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
  /**
   * Most requests in flight when any of the window's completed requests was admitted (itself
   * counted): the concurrency its latencies were measured at. The limit grows to at most 1.5×
   * this (as TCP's congestion window validation): a window whose requests were admitted at 4 in
   * flight says nothing about 9. Undefined (no bound) when unknown, or when a reserve's share
   * refused requests under the limit (the flood held to its share: in flight stays far under
   * the limit, which must still grow for the levels the reserve covers).
   */
  admittedInFlight?: number;
  /** Slowest latency (ms) in the window (default `rtt`): in slow start, one queued request stops the 1.5× steps. */
  maxRtt?: number;
  /** Whether the limit refused a request during the window (with a reserve, the flood is refused while in flight stays far under the limit). */
  limited?: boolean;
  /**
   * Standard error of `rtt` (ms; default 0): the window's latencies' standard deviation over
   * √count. A window is slower or faster than the long-term latency only by more than twice
   * this: with latency noise of ±50%, a window of 10 requests is 10% off by chance alone.
   */
  sem?: number;
}

/** The adaptive limit's state. */
export interface GradientState {
  /** The current limit (fractional; requests in flight are compared with its floor). */
  limit: number;
  /** Long-term latency (ms): restarted by each probe from the unloaded latency, then an exponential average over `longWindow` windows that did not queue; 0 before the first probe. */
  longRtt: number;
  /**
   * The slowest latency (ms) of the last probe's window, at most {@link MAX_SPREAD} × its mean: how
   * far the unloaded latency spreads (a window's slowest request is compared with it, not with the
   * mean, so latency noise of ±50% does not read as a queue); 0 before the first probe.
   */
  peakRtt: number;
  /** True from the start until the first window that queues: the limit grows 1.5× per window meanwhile (as TCP's slow start). */
  slowStart: boolean;
  /** Windows measured so far. */
  windows: number;
  /** When the next probe starts (ms on the limiter's clock). */
  nextProbeAt: number;
  /** The limit to resume after a probe; undefined outside one. */
  resume: number | undefined;
  /** During a probe, the mean latency (ms) of its last window, and that window's slowest; 0 at its first window and outside one. */
  probeRtt: number;
  probePeak: number;
  /** Windows the probe has measured so far (0 outside one). */
  probeWindows: number;
}

/**
 * Growth per window in slow start: the windows lag the limit (a window's requests were mostly
 * admitted under the previous one), so TCP's doubling would overshoot up to 4× capacity
 * before a window shows it; 1.5 overshoots at most ~2.25× for one window and still goes
 * from 4 to 1000 in 14 windows.
 */
const SLOW_START = 1.5;

/**
 * In slow start, a window this much slower than the long-term latency, but not queued, grows
 * the limit by the additive headroom instead of 1.5× (as TCP's HyStart slows on a rise in
 * delay): a 1.5× step lands up to 1.5× past capacity before a window shows it, and the queue
 * of that overshoot would sit in the p99. Slow start itself ends only at a queued window, so
 * one noisy window on a busy host does not leave it at a fraction of capacity.
 */
const SLOW_START_RISE = 1.1;

/**
 * The unloaded spread kept from a probe is at most this many times its mean latency: a probe's
 * slowest request slower than that met a stall of the host, not the service's own spread.
 */
const MAX_SPREAD = 2;

/**
 * Most windows a probe measures. The requests admitted as it starts wait behind the queue the
 * limit had built, and those a reserve keeps admitting at the steady limit slow its drain, so
 * its first window can measure that queue, not the unloaded latency: a probe whose first
 * window looks queued against the last probe's measure goes on while each window is faster
 * than the one before (beyond noise).
 */
const MAX_PROBE_WINDOWS = 5;

/** The share of the gap a window faster than the long-term latency closes at once. */
const FAST_DOWN = 0.5;

/** The gradient is never below this: the limit at most halves per window. */
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
    peakRtt: 0,
    slowStart: true,
    windows: 0,
    nextProbeAt: now + params.probeIntervalMs,
    resume: clamp(params.initialLimit, params.minLimit, params.maxLimit),
    probeRtt: 0,
    probePeak: 0,
    probeWindows: 0,
  };
}

/** The limit requests are admitted against: the whole part of the state's limit, never below 1. */
export function effectiveLimit(state: GradientState): number {
  return Math.max(1, Math.floor(state.limit));
}

/**
 * The limit a reserve is a share of (the levels it covers are admitted against it): during a
 * probe, the whole part of the limit the probe resumes; during slow start, `maxLimit` (the
 * capacity is not known yet, and a limit growing from 4 would shed critical requests for the
 * first windows of a flood; slow start ends at the first window that queues); otherwise
 * {@link effectiveLimit}.
 */
export function steadyLimit(state: GradientState, params: GradientParams): number {
  if (state.slowStart) return params.maxLimit;
  return state.resume === undefined ? effectiveLimit(state) : Math.max(1, Math.floor(state.resume));
}

/**
 * The state after one window. `jitter` in [0, 1) spreads probes (±10% of the interval) so a
 * fleet started together does not probe in step.
 *
 * - During a probe (the limit held at `minLimit`, so no queue forms) the window's latency is
 *   the unloaded latency once the queue built before it has drained: a first window slower
 *   than `tolerance` × the long-term latency is followed by more while each is faster than the
 *   one before (at most 5 in all); the long-term average restarts from the fastest and the
 *   limit resumes.
 * - A window slower than `tolerance` × the long-term latency queued: the limit is cut at once
 *   (unsmoothed, as an AIMD cut) by the gradient `tolerance × long / short`, at most halved.
 *   Such a window is left out of the long-term average: under sustained queueing an average of
 *   every window creeps up, and the limit with it (Gradient2's drift); probes re-measure it.
 *   A window faster than the long-term latency halves the gap at once.
 * - A window that did not queue grows the limit: 1.5× during slow start, otherwise by a
 *   headroom of `smoothing` × √limit (Envoy's headroom, smoothed), to keep looking for
 *   capacity. A window using under half the limit in which the limit refused nothing does not
 *   grow it (the app, not the service, was the limit then; with a reserve, the flood is
 *   refused at its share of the limit, which can be far under half of it).
 */
export function gradientStep(
  state: GradientState,
  sample: GradientSample,
  now: number,
  params: GradientParams,
  jitter: number,
): GradientState {
  if (!(sample.rtt > 0) || !Number.isFinite(sample.rtt)) return state;
  // The window's latency less (or plus) its noise: chance alone does not cut, grow or move the bar.
  const margin = 2 * (sample.sem ?? 0);
  if (state.resume !== undefined) {
    // Its first window slower than the bar (or any later one faster than the last): the queue
    // built before the probe may still be draining, so one more window is measured.
    const draining =
      state.probeWindows === 0
        ? state.longRtt > 0 && sample.rtt - margin > params.tolerance * state.longRtt
        : sample.rtt + margin < state.probeRtt;
    if (draining && state.probeWindows + 1 < MAX_PROBE_WINDOWS) {
      return {
        ...state,
        windows: state.windows + 1,
        probeRtt: sample.rtt,
        probePeak: sample.maxRtt ?? sample.rtt,
        probeWindows: state.probeWindows + 1,
      };
    }
    // The queue has drained (this window is no faster than the last): the faster of the two.
    const last = draining || state.probeWindows === 0 || state.probeRtt > sample.rtt;
    const rtt = last ? sample.rtt : state.probeRtt;
    const peak = last ? (sample.maxRtt ?? sample.rtt) : state.probePeak;
    return {
      limit: state.resume,
      longRtt: rtt,
      peakRtt: Math.min(peak, MAX_SPREAD * rtt),
      slowStart: state.slowStart,
      windows: state.windows + 1,
      nextProbeAt: now + params.probeIntervalMs * (0.9 + 0.2 * jitter),
      resume: undefined,
      probeRtt: 0,
      probePeak: 0,
      probeWindows: 0,
    };
  }
  const windows = state.windows + 1;
  const queued = sample.rtt - margin > params.tolerance * state.longRtt;
  // Faster than the long-term latency: a spike ended, or the probe met a noisy moment (one
  // window on a busy host can be 1.5× slow), so it comes down fast. Slower but not queued: the
  // slow average. Queued: left out.
  // In slow start, nothing has queued yet: every window measures the unloaded latency as well as
  // the probe's one did, so they are averaged with it (the mean of all so far). A probe's one
  // window of ~10 requests with latency noise of ±50% read 35 ms for a mean of 41, no later
  // window weighed enough to lift it, and the flood's first window (53 ms, noise) read as a
  // queue: the limit was cut to 4, slow start ended, and it took 4 s to grow back to 32 slots.
  // (Not a window whose latency rose: a queue may be starting there.)
  const flat =
    state.slowStart &&
    sample.rtt - margin <= SLOW_START_RISE * state.longRtt &&
    (sample.maxRtt ?? 0) <= params.tolerance * Math.max(state.longRtt, state.peakRtt);
  const slow = Math.max(2 / (params.longWindow + 1), flat ? 1 / (state.windows + 1) : 0);
  const weight = sample.rtt + margin < state.longRtt ? FAST_DOWN : queued ? 0 : slow;
  const longRtt = state.longRtt + (sample.rtt - state.longRtt) * weight;
  let limit = state.limit;
  let slowStart = state.slowStart;
  if (queued) {
    limit *= Math.max(MIN_GRADIENT, (params.tolerance * state.longRtt) / sample.rtt);
    // A queue in slow start: back to the last limit that showed none, if the gradient cut less.
    if (slowStart) limit = Math.min(limit, state.limit / SLOW_START);
    slowStart = false;
  } else if (sample.limited === true || sample.maxInFlight >= limit / 2) {
    // The slowest request too: the requests that queued behind a step finish last, and in a
    // window of many they move the mean little.
    const rising =
      sample.rtt - margin > SLOW_START_RISE * state.longRtt ||
      (sample.maxRtt ?? 0) > params.tolerance * Math.max(state.longRtt, state.peakRtt);
    const grown = slowStart && !rising ? limit * SLOW_START : limit + params.smoothing * Math.sqrt(limit);
    // Never past 1.5× the concurrency the window measured: a calm load of 4 in flight grew the
    // limit 4 → 6 → 9 (4 ≥ 9 / 2), and the first window of a flood, its latencies still the
    // calm ones, to 13; the flood then queued 9 behind a 4-slot pool, 3 latencies deep (p99
    // 2.5× the unloaded one on bench/shed.mjs, the first second of a fresh server).
    const tested = sample.admittedInFlight;
    limit = tested === undefined ? grown : Math.max(limit, Math.min(grown, SLOW_START * tested));
  }
  limit = clamp(limit, params.minLimit, params.maxLimit);
  const next: GradientState = {
    limit,
    longRtt,
    peakRtt: state.peakRtt,
    slowStart,
    windows,
    nextProbeAt: state.nextProbeAt,
    resume: undefined,
    probeRtt: 0,
    probePeak: 0,
    probeWindows: 0,
  };
  if (now >= state.nextProbeAt) {
    return { ...next, limit: params.minLimit, resume: limit };
  }
  return next;
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

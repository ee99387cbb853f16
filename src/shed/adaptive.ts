/**
 * The adaptive limit at run time: collects the latencies of completed requests into windows and
 * steps the pure gradient algorithm (src/shed/gradient.ts) when a window closes. No timers: a
 * window closes on the completion that finds it old and full enough.
 */
import {
  effectiveLimit,
  type GradientParams,
  type GradientState,
  gradientStep,
  initialGradient,
  steadyLimit,
} from "./gradient.ts";

/** The limit `loadShed` admits against: a fixed number, or one that follows latency. */
export interface LimitSource {
  /** Requests that may be in flight now. */
  current(): number;
  /**
   * The limit a reserve's shares are taken of: `current()`, except while the adaptive limit
   * probes at `minLimit`, when it is the limit the probe resumes (a reserve holds during a
   * probe: the probe holds back the less critical traffic only).
   */
  steady(): number;
  /** A request started (with `inFlight` counting it) at `now`. */
  started(inFlight: number): void;
  /** A request admitted at `startedAt` (with `inFlight` in flight, itself counted; unknown if undefined) completed at `now` after `rttMs`. */
  completed(rttMs: number, startedAt: number, now: number, inFlight?: number): void;
  /** The limit refused a request (`share`: with fewer in flight than the limit, a reserve's share was full). */
  refused(share?: boolean): void;
}

/** A limit that never moves. */
export function fixedLimit(limit: number): LimitSource {
  return { current: () => limit, steady: () => limit, started: () => {}, completed: () => {}, refused: () => {} };
}

/** Windows this many times `windowMs` old close with any number of samples (a quiet service still adapts). */
const STRETCH = 10;

/** The gradient limit fed by request completions. */
export class AdaptiveLimit implements LimitSource {
  #state: GradientState;
  #limit: number;
  #steady: number;
  /**
   * The steady limits of the windows of the last probe interval that no later window exceeded,
   * oldest (and highest) first: their first is the highest steady limit of the interval.
   */
  readonly #recent: { at: number; limit: number }[] = [];
  readonly #params: GradientParams;
  readonly #random: () => number;
  #windowStart: number;
  #sum = 0;
  #squares = 0;
  #max = 0;
  #count = 0;
  #maxInFlight = 0;
  /** Most in flight at the admission of the window's completed requests; -1 while none said. */
  #admittedInFlight = -1;
  #limited = false;
  /** A reserve's share refused a request this window, under the limit. */
  #shared = false;
  /** Requests admitted before this instant are left out of the window (a probe, or the window after a cut, measures only its own). */
  #since = Number.NEGATIVE_INFINITY;

  constructor(params: GradientParams, now: number, random: () => number = Math.random) {
    this.#params = params;
    this.#random = random;
    this.#state = initialGradient(params, now);
    this.#limit = effectiveLimit(this.#state);
    this.#steady = steadyLimit(this.#state, params);
    this.#windowStart = now;
  }

  /** The state of the algorithm (for stats and tests). */
  get state(): Readonly<GradientState> {
    return this.#state;
  }

  current(): number {
    return this.#limit;
  }

  steady(): number {
    return this.#steady;
  }

  /**
   * The limit the reserve's levels are admitted against: the highest steady limit of the windows
   * of the last probe interval. A cut sheds the less critical traffic at once, but reaches the
   * reserve only once it has lasted a probe interval: a busy host's stalls cut the limit to half
   * a window, again and again, and critical requests spread over the slots they had, or piled up
   * by a stall, would be shed otherwise. The reserve is what a probe confirmed, not what the
   * last stall left.
   */
  #reserveLimit(now: number): number {
    const state = this.#state;
    const recent = this.#recent;
    // (In slow start the reserve's levels have maxLimit; what the limit reached is kept.)
    const limit = state.slowStart ? effectiveLimit(state) : steadyLimit(state, this.#params);
    while (recent.length > 0 && (recent[recent.length - 1] as { limit: number }).limit <= limit) recent.pop();
    recent.push({ at: now, limit });
    const since = now - this.#params.probeIntervalMs;
    while ((recent[0] as { at: number }).at < since) recent.shift();
    return state.slowStart ? this.#params.maxLimit : (recent[0] as { limit: number }).limit;
  }

  started(inFlight: number): void {
    if (inFlight > this.#maxInFlight) this.#maxInFlight = inFlight;
  }

  refused(share?: boolean): void {
    this.#limited = true;
    if (share === true) this.#shared = true;
  }

  completed(rttMs: number, startedAt: number, now: number, inFlight?: number): void {
    if (startedAt < this.#since) return;
    if (inFlight !== undefined && inFlight > this.#admittedInFlight) this.#admittedInFlight = inFlight;
    this.#sum += rttMs;
    this.#squares += rttMs * rttMs;
    if (rttMs > this.#max) this.#max = rttMs;
    this.#count++;
    const age = now - this.#windowStart;
    const p = this.#params;
    // At least two long-term latencies old too: requests admitted at once after a step finish
    // one latency later, before the queue the step builds; the window must reach the requests
    // admitted once the new limit filled up, or slow start steps again past capacity.
    if (age < p.windowMs || age < 2 * this.#state.longRtt || (this.#count < p.minSamples && age < p.windowMs * STRETCH))
      return;
    const before = this.#state.limit;
    const count = this.#count;
    const rtt = this.#sum / count;
    // The sample variance's standard error of the mean (0 for a single sample).
    const sem = count < 2 ? 0 : Math.sqrt(Math.max(0, this.#squares - count * rtt * rtt) / (count - 1) / count);
    this.#state = gradientStep(
      this.#state,
      {
        rtt,
        maxRtt: this.#max,
        maxInFlight: this.#maxInFlight,
        // A reserve's share held the window's concurrency down: it does not bound the limit.
        ...(this.#admittedInFlight >= 0 && !this.#shared ? { admittedInFlight: this.#admittedInFlight } : {}),
        limited: this.#limited,
        sem,
      },
      now,
      p,
      this.#random(),
    );
    this.#limit = effectiveLimit(this.#state);
    this.#steady = this.#reserveLimit(now);
    // A probe starts or goes on, the limit was cut, or it grew in slow start: only requests
    // admitted from now on show the latency at the new limit (those admitted before would cut
    // it again for the same queue, hide the queue a slow-start step made, or show a probe's
    // next window the queue its last one drained).
    const state = this.#state;
    if (state.resume !== undefined || state.limit < before || (state.slowStart && state.limit > before)) {
      this.#since = now;
    }
    this.#windowStart = now;
    this.#sum = 0;
    this.#squares = 0;
    this.#max = 0;
    this.#count = 0;
    this.#maxInFlight = 0;
    this.#admittedInFlight = -1;
    this.#limited = false;
    this.#shared = false;
  }
}

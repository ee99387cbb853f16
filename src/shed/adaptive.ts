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
  /** A request admitted at `startedAt` completed at `now` after `rttMs`. */
  completed(rttMs: number, startedAt: number, now: number): void;
  /** The limit refused a request. */
  refused(): void;
}

/** A limit that never moves. */
export function fixedLimit(limit: number): LimitSource {
  return { current: () => limit, steady: () => limit, started: () => {}, completed: () => {}, refused: () => {} };
}

/** How many windows a cut takes to reach the reserve's levels (about a second at the default 100 ms). */
const RESERVE_WINDOWS = 10;

/** Windows this many times `windowMs` old close with any number of samples (a quiet service still adapts). */
const STRETCH = 10;

/** The gradient limit fed by request completions. */
export class AdaptiveLimit implements LimitSource {
  #state: GradientState;
  #limit: number;
  #steady: number;
  /** The steady limits of the last windows (newest last), at most {@link RESERVE_WINDOWS}. */
  readonly #recent: number[] = [];
  readonly #params: GradientParams;
  readonly #random: () => number;
  #windowStart: number;
  #sum = 0;
  #max = 0;
  #count = 0;
  #maxInFlight = 0;
  #limited = false;
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
   * The limit the reserve's levels are admitted against: the highest steady limit of the last
   * {@link RESERVE_WINDOWS} windows. A cut (a stall on a busy host cuts it to half in one
   * window) sheds the less critical traffic at once, but reaches the reserve only when it
   * lasts: critical requests already spread over the slots they had would be shed otherwise.
   */
  #reserveLimit(): number {
    const state = this.#state;
    const recent = this.#recent;
    // (In slow start the reserve's levels have maxLimit; what the limit reached is kept.)
    recent.push(state.slowStart ? effectiveLimit(state) : steadyLimit(state, this.#params));
    if (recent.length > RESERVE_WINDOWS) recent.shift();
    return state.slowStart ? this.#params.maxLimit : Math.max(...recent);
  }

  started(inFlight: number): void {
    if (inFlight > this.#maxInFlight) this.#maxInFlight = inFlight;
  }

  refused(): void {
    this.#limited = true;
  }

  completed(rttMs: number, startedAt: number, now: number): void {
    if (startedAt < this.#since) return;
    this.#sum += rttMs;
    if (rttMs > this.#max) this.#max = rttMs;
    this.#count++;
    const age = now - this.#windowStart;
    const p = this.#params;
    // At least two long-term latencies old too: requests admitted at once after a step finish
    // one latency later, before the queue the step builds; the window must reach the requests
    // admitted once the new limit filled up, or slow start steps again past capacity.
    if (age < p.windowMs || age < 2 * this.#state.longRtt || (this.#count < p.minSamples && age < p.windowMs * STRETCH))
      return;
    const probing = this.#state.resume !== undefined;
    const before = this.#state.limit;
    this.#state = gradientStep(
      this.#state,
      { rtt: this.#sum / this.#count, maxRtt: this.#max, maxInFlight: this.#maxInFlight, limited: this.#limited },
      now,
      p,
      this.#random(),
    );
    this.#limit = effectiveLimit(this.#state);
    this.#steady = this.#reserveLimit();
    // A probe starts now, the limit was cut, or it grew in slow start: only requests admitted
    // from now on show the latency at the new limit (those admitted before would cut it again
    // for the same queue, or hide the queue a slow-start step made).
    const state = this.#state;
    if ((!probing && state.resume !== undefined) || state.limit < before || (state.slowStart && state.limit > before)) {
      this.#since = now;
    }
    this.#windowStart = now;
    this.#sum = 0;
    this.#max = 0;
    this.#count = 0;
    this.#maxInFlight = 0;
    this.#limited = false;
  }
}

/**
 * Event-loop pressure as a shedding level, after Stripe's worker-utilization load shedder: over
 * its threshold the process sheds the least critical priority still served, one more level per
 * sample; it gives a level back only after `rampSamples` samples in a row below the dead zone.
 * Between the dead zone and the threshold nothing moves, so the level does not flap around the
 * threshold. Pure: a step takes the level and one sample's load.
 */

/** Priorities run 0 (most critical) to 9 (least); requests at or above the cutoff are shed. */
export const PRIORITY_LEVELS = 10;

/** Event-loop pressure never sheds priority 0: the cutoff stops at 1 (a `limit` still caps level 0). */
export const MIN_CUTOFF = 1;

/** Tuning of the pressure shedder. */
export interface PressureParams {
  /** Width of the band under the threshold where the level holds, as a share of the threshold (default 0.2). */
  deadZone: number;
  /** Samples in a row below the dead zone before one level is served again (default 3). */
  rampSamples: number;
}

/** The pressure shedder's state. */
export interface PressureState {
  /** Priorities at or above this are shed (10: none). */
  cutoff: number;
  /** Samples in a row below the dead zone. */
  calm: number;
}

/** No shedding. */
export const NO_PRESSURE: PressureState = Object.freeze({ cutoff: PRIORITY_LEVELS, calm: 0 });

/**
 * The state after a sample whose `load` is the measured value over its threshold (1 = at the
 * threshold; the larger of the event-loop delay's and utilization's ratios).
 */
export function pressureStep(state: PressureState, load: number, params: PressureParams): PressureState {
  if (load > 1) return { cutoff: Math.max(MIN_CUTOFF, state.cutoff - 1), calm: 0 };
  if (load >= 1 - params.deadZone) return state.calm === 0 ? state : { cutoff: state.cutoff, calm: 0 };
  if (state.cutoff >= PRIORITY_LEVELS) return NO_PRESSURE;
  const calm = state.calm + 1;
  if (calm < params.rampSamples) return { cutoff: state.cutoff, calm };
  return { cutoff: state.cutoff + 1, calm: 0 };
}

/** Load shedding (SPEC §16): the framework-neutral shedder the `loadShed` adapters of src/http drive. */

export { AdaptiveLimit, fixedLimit, type LimitSource } from "./adaptive.ts";
export { admits, allowances, heldShares, type Reserve } from "./admission.ts";
export {
  effectiveLimit,
  GRADIENT_DEFAULTS,
  type GradientOptions,
  type GradientParams,
  type GradientSample,
  type GradientState,
  gradientStep,
  initialGradient,
} from "./gradient.ts";
export { prometheusText, type ShedStats } from "./metrics.ts";
export { DEFAULT_PRIORITY, LOAD_SHED_OPTION_KEYS, type LoadShedOptions } from "./options.ts";
export { NO_PRESSURE, PRIORITY_LEVELS, type PressureParams, type PressureState, pressureStep } from "./pressure.ts";
export { type LoadShedHandle, type Release, Shedder } from "./shedder.ts";

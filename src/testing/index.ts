/**
 * `sluice/testing`: the store conformance kit. `storeConformance({ name, create })` yields named
 * cases `{ name, run() }` any test runner can drive; their expected answers come from an
 * independent reference model (`RuleOracle`), which ships here too.
 */
export { ALGORITHM_RULES } from "./cases.ts";
export {
  CONFORMANCE_EPOCH,
  type ConformanceCase,
  type ServiceConformanceOptions,
  type StoreConformanceOptions,
  serviceConformance,
  storeConformance,
} from "./conformance.ts";
export { modelOf, type OracleBan, type ReferenceModel, RuleOracle } from "./oracle.ts";
export type { ConformanceRule, ConformanceSubject, Feature, SubjectCallOptions } from "./subject.ts";

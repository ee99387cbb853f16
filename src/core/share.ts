/**
 * One instance's share of a limit: the spec a process enforces alone so that `instances`
 * processes together admit no more than the whole limit. Used where a shared store cannot
 * answer and each process decides locally (`onError: { fallback, instances }`, or a fallback
 * limiter built with it). Counts are divided and rounded down, never below 1 (a share of
 * nothing would refuse everything); rates are divided exactly. Windows and periods stay.
 */
import type { AlgorithmSpec, LimitSpec, RuleSpec } from "../algorithms/specs.ts";
import { describeValue } from "./describe-value.ts";
import { ArgumentError } from "./errors.ts";
import { validateRule, validateSpec } from "./spec.ts";

const part = (count: number, instances: number): number => Math.max(1, Math.floor(count / instances));

/** Checks `instances`: a safe integer ≥ 1. */
export function checkInstances(instances: unknown, where = "instances"): number {
  if (typeof instances !== "number" || !Number.isSafeInteger(instances) || instances < 1) {
    throw new ArgumentError(`\`${where}\` must be a positive integer (got ${describeValue(instances)})`);
  }
  return instances;
}

/** One member's share (validated). */
function memberShare(spec: AlgorithmSpec, instances: number): AlgorithmSpec {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
    // Requests in flight: each process may hold its share of the slots.
    case "concurrency":
      return { ...spec, limit: part(spec.limit, instances) };
    case "token-bucket":
      return { ...spec, capacity: part(spec.capacity, instances), refillPerSecond: spec.refillPerSecond / instances };
    case "leaky-bucket":
      return { ...spec, capacity: part(spec.capacity, instances), leakPerSecond: spec.leakPerSecond / instances };
    case "gcra": {
      const { burst, ...rest } = spec;
      const shared: AlgorithmSpec = { ...rest, limit: part(spec.limit, instances) };
      return burst === undefined ? shared : { ...shared, burst: part(burst, instances) };
    }
  }
}

/**
 * The share of `spec` (one spec or a composite) that one of `instances` processes enforces:
 * `shareOf({ algorithm: "sliding-log", limit: 100, windowMs: 60_000 }, 4)` limits to 25.
 */
export function shareOf(spec: LimitSpec, instances: number): AlgorithmSpec;
export function shareOf(spec: RuleSpec, instances: number): AlgorithmSpec | AlgorithmSpec[];
export function shareOf(spec: RuleSpec, instances: number): AlgorithmSpec | AlgorithmSpec[] {
  const n = checkInstances(instances);
  if (Array.isArray(spec)) return validateRule(spec, "shareOf: ").map((member) => validateSpec(memberShare(member, n)));
  return validateSpec(memberShare(validateSpec(spec, "shareOf: "), n));
}

/**
 * Limit specs: plain objects naming an algorithm and its parameters. `validateSpec` turns
 * user input (including the seed's `type` aliases) into a normalised spec or throws a
 * ConfigError that names the field and the value received.
 */

import { type AlgorithmName, type AlgorithmSpec, DEFAULT_LEASE_MS, SPEC_ALGORITHMS } from "../algorithms/specs.ts";
import { describeValue } from "./describe-value.ts";
import { ConfigError } from "./errors.ts";

export {
  ALGORITHMS,
  type AlgorithmName,
  type AlgorithmSpec,
  type ConcurrencySpec,
  DEFAULT_LEASE_MS,
  type FixedWindowSpec,
  type GcraSpec,
  type LeakyBucketSpec,
  type LimitSpec,
  type RateAlgorithmName,
  type RuleSpec,
  type ShorthandSpec,
  type SlidingLogSpec,
  type SlidingWindowSpec,
  SPEC_ALGORITHMS,
  type TokenBucketSpec,
  type WindowAnchor,
} from "../algorithms/specs.ts";

type FieldKind = "integer" | "rate" | "anchor";
const FIELDS: Record<AlgorithmName, Record<string, FieldKind>> = {
  "fixed-window": { limit: "integer", windowMs: "integer", anchor: "anchor" },
  "sliding-log": { limit: "integer", windowMs: "integer" },
  "sliding-window": { limit: "integer", windowMs: "integer" },
  "token-bucket": { capacity: "integer", refillPerSecond: "rate" },
  gcra: { limit: "integer", periodMs: "integer", burst: "integer" },
  "leaky-bucket": { capacity: "integer", leakPerSecond: "rate" },
  concurrency: { limit: "integer", leaseMs: "integer" },
};
/** Every field any spec may carry (`algorithm` and each algorithm's parameters), from the one table above. */
export const SPEC_FIELDS: readonly string[] = [
  "algorithm",
  ...new Set(Object.values(FIELDS).flatMap((fields) => Object.keys(fields))),
];
const OPTIONAL = new Set(["burst", "anchor", "leaseMs"]);
const ANCHORS = ["clock", "first"];
const SEED_TYPES: Record<string, AlgorithmName> = {
  fixed: "fixed-window",
  sliding: "sliding-log",
  bucket: "token-bucket",
};

function fail(where: string, field: string, message: string, value: unknown): never {
  throw new ConfigError(field, `${where}${message} (got ${describeValue(value)})`, value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Validates one spec and returns its normalised form (`algorithm` set, `burst` filled in).
 * `where` prefixes messages, e.g. `rule "login" [1]: `.
 */
export function validateSpec(input: unknown, where = ""): AlgorithmSpec {
  if (!isPlainObject(input)) fail(where, "spec", "a spec must be a plain object", input);
  let name: AlgorithmName;
  const hasAlgorithm = "algorithm" in input;
  const hasType = "type" in input;
  if (hasAlgorithm && hasType) fail(where, "type", "give either `algorithm` or `type`, not both", input.type);
  if (hasType) {
    const alias = typeof input.type === "string" ? SEED_TYPES[input.type] : undefined;
    if (alias === undefined || !Object.hasOwn(SEED_TYPES, input.type as string)) {
      fail(where, "type", 'type must be one of "fixed", "sliding", "bucket"', input.type);
    }
    name = alias;
  } else if (hasAlgorithm) {
    const algorithm = input.algorithm;
    if (typeof algorithm !== "string" || !(SPEC_ALGORITHMS as readonly string[]).includes(algorithm)) {
      const names = SPEC_ALGORITHMS.map((a) => `"${a}"`).join(", ");
      fail(where, "algorithm", `algorithm must be one of ${names}`, algorithm);
    }
    name = algorithm as AlgorithmName;
  } else {
    fail(where, "algorithm", "algorithm is required", undefined);
  }

  const fields = FIELDS[name];
  for (const key of Object.keys(input)) {
    if (key === "algorithm" || key === "type") continue;
    if (!Object.hasOwn(fields, key)) {
      fail(where, key, `unknown field \`${key}\` for ${name} (expected ${Object.keys(fields).join(", ")})`, input[key]);
    }
  }
  const out: Record<string, unknown> = { algorithm: name };
  for (const [field, kind] of Object.entries(fields)) {
    const value = input[field];
    if (value === undefined && OPTIONAL.has(field)) continue;
    if (kind === "anchor") {
      if (typeof value !== "string" || !ANCHORS.includes(value)) {
        fail(where, field, `${field} must be one of ${ANCHORS.map((a) => `"${a}"`).join(", ")}`, value);
      }
      // The default is left out, so `{ anchor: "clock" }` and no anchor are one spec.
      if (value !== "clock") out[field] = value;
      continue;
    }
    if (kind === "integer") {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
        fail(where, field, `${field} must be a positive integer`, value);
      }
    } else if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      fail(where, field, `${field} must be a finite number greater than 0`, value);
    }
    out[field] = value;
  }
  if (name === "gcra" && out.burst === undefined) out.burst = out.limit;
  // Filled in, so `{ limit }` and `{ limit, leaseMs: 60_000 }` are one spec (one identity, one state).
  if (name === "concurrency" && out.leaseMs === undefined) out.leaseMs = DEFAULT_LEASE_MS;
  if (name === "token-bucket" || name === "leaky-bucket") {
    // A rate so small that refilling the whole capacity overflows to Infinity ms would make the
    // arithmetic NaN/Infinity (a leaky bucket would then admit everything): never "unlimited".
    const field = name === "token-bucket" ? "refillPerSecond" : "leakPerSecond";
    if (!Number.isFinite(((out.capacity as number) * 1000) / (out[field] as number))) {
      fail(where, field, `${field} is too small (capacity·1000 / ${field} ms must be finite)`, out[field]);
    }
  }
  if (name === "gcra" || name === "leaky-bucket") {
    // The integer arithmetic of src/algorithms/gcra.ts keeps the burst and τ (a full burst's
    // drain time) in 52-bit tick counts: both must stay below 2^51 (τ: 71,000 years).
    const [field, burst] = name === "gcra" ? ["burst", out.burst as number] : ["capacity", out.capacity as number];
    if (burst > 2 ** 51) fail(where, field, `${field} must be at most 2^51`, burst);
    const tauMs =
      name === "gcra"
        ? (burst * (out.periodMs as number)) / (out.limit as number)
        : (burst * 1000) / (out.leakPerSecond as number);
    if (tauMs > 2 ** 51) {
      const rate = name === "gcra" ? "periodMs" : "leakPerSecond";
      fail(where, rate, `a full ${field} must drain within 2^51 ms (it takes ${tauMs} ms)`, out[rate]);
    }
  }
  if (name === "sliding-window" && (out.limit as number) * (out.windowMs as number) > 2 ** 51) {
    // The algorithm compares limit·windowMs products in integer arithmetic; past 2^51 a double
    // (ours, and Redis Lua's) could no longer hold them exactly.
    fail(where, "windowMs", "limit × windowMs must be at most 2^51 for sliding-window", out.windowMs);
  }
  return out as unknown as AlgorithmSpec;
}

/** Validates a rule (one spec or a non-empty array of specs) and returns its normalised members. */
export function validateRule(input: unknown, where = ""): AlgorithmSpec[] {
  if (Array.isArray(input)) {
    if (input.length === 0) fail(where, "spec", "a composite rule needs at least one spec", input);
    return input.map((spec, i) => validateSpec(spec, `${where}[${i}] `));
  }
  return [validateSpec(input, where)];
}

/** The figure a spec reports as `limit`: limit, capacity or burst. */
export function specLimit(spec: AlgorithmSpec): number {
  switch (spec.algorithm) {
    case "token-bucket":
    case "leaky-bucket":
      return spec.capacity;
    case "gcra":
      return spec.burst ?? spec.limit;
    default:
      return spec.limit;
  }
}

/**
 * What the `RateLimit-Policy` header advertises for each member of a rule: a quota `q` and a
 * window `w` in whole seconds. Every algorithm maps onto "q units, fully restored within w
 * seconds", which is what a client needs to pace itself:
 *
 * | algorithm | q | w |
 * |---|---|---|
 * | fixed-window, sliding-log, sliding-window | `limit` | `windowMs / 1000` |
 * | token-bucket | `capacity` | `capacity / refillPerSecond` (empty → full) |
 * | gcra | `burst` | `τ = burst · periodMs / limit` (ms → s) |
 * | leaky-bucket | `capacity` | `capacity / leakPerSecond` (full queue → drained) |
 *
 * `w` is rounded up and at least 1 (the drafts only have whole seconds).
 */

import { describeValue } from "../core/describe-value.ts";
import { ConfigError } from "../core/errors.ts";
import { type AlgorithmSpec, specLimit } from "../core/spec.ts";

/** One advertised policy: its name, quota and window (seconds). */
export interface Policy {
  readonly name: string;
  readonly quota: number;
  readonly windowSeconds: number;
}

/** The window, in whole seconds rounded up (≥ 1), over which `spec` restores its full quota. */
export function windowSeconds(spec: AlgorithmSpec): number {
  let ms: number;
  switch (spec.algorithm) {
    case "token-bucket":
      ms = (spec.capacity / spec.refillPerSecond) * 1000;
      break;
    case "leaky-bucket":
      ms = (spec.capacity / spec.leakPerSecond) * 1000;
      break;
    case "gcra":
      ms = ((spec.burst ?? spec.limit) * spec.periodMs) / spec.limit;
      break;
    case "concurrency":
      // Requests in flight have no window; a lease's length is the longest a slot stays taken.
      ms = spec.leaseMs ?? 60_000;
      break;
    default:
      ms = spec.windowMs;
  }
  // 1e-9 forgives float noise such as 3 × (1000 / 3) = 1000.0000000000001.
  return Math.max(1, Math.ceil(ms / 1000 - 1e-9));
}

/** Checks that a policy name can be written as a Structured Fields String (printable ASCII). */
export function checkPolicyName(name: unknown): string {
  if (typeof name !== "string" || name.length === 0 || !/^[\x20-\x7e]+$/.test(name)) {
    throw new ConfigError(
      "policyName",
      `\`policyName\` must be a non-empty string of printable ASCII (got ${describeValue(name)})`,
      name,
    );
  }
  return name;
}

/**
 * The policies of a rule's members. `names` is one name (members of a composite get `name-1`,
 * `name-2`, … in spec order) or one name per member.
 */
export function policiesFor(specs: readonly AlgorithmSpec[], names: string | readonly string[]): Policy[] {
  if (typeof names !== "string" && names.length !== specs.length) {
    throw new ConfigError(
      "policyName",
      `\`policyName\` lists ${names.length} names for a rule of ${specs.length} specs; give one name per spec, or a single name`,
      names,
    );
  }
  return specs.map((spec, i) => ({
    name: checkPolicyName(
      typeof names === "string" ? (specs.length === 1 ? names : `${names}-${i + 1}`) : (names[i] as string),
    ),
    quota: specLimit(spec),
    windowSeconds: windowSeconds(spec),
  }));
}

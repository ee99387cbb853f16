/**
 * The circuit breaker of every remote store (each Redis node, the cluster store, the service
 * client): after `failures` consecutive failed round trips it opens, and calls are answered by
 * the failure policy at once instead of queueing on a server that is down. After `coolDownMs`
 * one probe is let through (half-open); its success closes the circuit.
 */
import { systemClock } from "../../core/clock.ts";
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError } from "../../core/errors.ts";

/** Circuit breaker settings (the `breaker` option of RedisStore, ClusterStore and createClient). */
export interface BreakerOptions {
  /** Consecutive failures that open the circuit (default 5). */
  failures?: number;
  /** How long it stays open before a probe is let through, in ms (default 1000). */
  coolDownMs?: number;
}

const DEFAULT_FAILURES = 5;
const DEFAULT_COOL_DOWN_MS = 1000;

function positiveInteger(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ArgumentError(`\`${name}\` must be a positive integer (got ${describeValue(value)})`);
  }
  return value;
}

/** Checks a `breaker` option, throwing ArgumentError naming what is wrong. */
export function checkBreaker(value: unknown): BreakerOptions | false | undefined {
  if (value === undefined || value === false) return value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ArgumentError(`\`breaker\` must be false or { failures?, coolDownMs? } (got ${describeValue(value)})`);
  }
  for (const key of Object.keys(value)) {
    if (key !== "failures" && key !== "coolDownMs") {
      throw new ArgumentError(`unknown breaker option \`${key}\` (expected failures, coolDownMs)`);
    }
  }
  const b = value as BreakerOptions;
  const out: BreakerOptions = {};
  if (b.failures !== undefined) out.failures = positiveInteger("breaker.failures", b.failures);
  if (b.coolDownMs !== undefined) out.coolDownMs = positiveInteger("breaker.coolDownMs", b.coolDownMs);
  return out;
}

/** The breaker state machine; time comes from `systemClock` (monotonic). */
export class Breaker {
  readonly #threshold: number;
  readonly #coolDownMs: number;
  #failures = 0;
  #openUntil = 0;
  #open = false;
  #probing = false;

  constructor(options: BreakerOptions | false | undefined) {
    this.#threshold = options === false ? Number.POSITIVE_INFINITY : (options?.failures ?? DEFAULT_FAILURES);
    this.#coolDownMs = options === false ? 0 : (options?.coolDownMs ?? DEFAULT_COOL_DOWN_MS);
  }

  /** True when the circuit is open (calls are not sent). */
  get open(): boolean {
    return this.#open;
  }

  /** Whether a call may be sent now; in half-open state only the single probe may. */
  allow(): boolean {
    if (!this.#open) return true;
    if (this.#probing || systemClock.now() < this.#openUntil) return false;
    this.#probing = true;
    return true;
  }

  /** A round trip succeeded: close the circuit. */
  success(): void {
    this.#failures = 0;
    this.#open = false;
    this.#probing = false;
  }

  /** A round trip failed (error or timeout): count it, and open (again) when due. */
  failure(): void {
    this.#failures++;
    if (this.#probing || this.#failures >= this.#threshold) {
      this.#open = true;
      this.#probing = false;
      this.#openUntil = systemClock.now() + this.#coolDownMs;
    }
  }
}

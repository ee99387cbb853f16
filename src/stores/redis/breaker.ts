/**
 * A circuit breaker: after `failures` consecutive failed round trips it opens, and checks are
 * answered by the failure policy at once instead of queueing on a Redis that is down. After
 * `coolDownMs` one probe is let through (half-open); its success closes the circuit.
 */
import { systemClock } from "../../core/clock.ts";

/** Circuit breaker settings (`RedisStoreOptions.breaker`). */
export interface BreakerOptions {
  /** Consecutive failures that open the circuit (default 5). */
  failures?: number;
  /** How long it stays open before a probe is let through, in ms (default 1000). */
  coolDownMs?: number;
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
    this.#threshold = options === false ? Number.POSITIVE_INFINITY : (options?.failures ?? 5);
    this.#coolDownMs = options === false ? 0 : (options?.coolDownMs ?? 1000);
  }

  /** True when the circuit is open (checks are not sent to Redis). */
  get open(): boolean {
    return this.#open;
  }

  /** Whether a request may go to Redis now; in half-open state only the single probe may. */
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

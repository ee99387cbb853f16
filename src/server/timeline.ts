/**
 * Admitted and denied per second over the last few minutes, in a fixed ring of one slot per
 * second: memory is the same after an hour or a year, and a second with no traffic costs
 * nothing (a slot is recognised as stale by the second it holds).
 */

/** The counts of the last `seconds` whole seconds, oldest first. */
export interface Series {
  /** Epoch second of the first slot. */
  start: number;
  allowed: number[];
  denied: number[];
}

/** One rule's ring. */
export class Timeline {
  readonly seconds: number;
  readonly #stamp: Float64Array;
  readonly #allowed: Uint32Array;
  readonly #denied: Uint32Array;

  constructor(seconds = 300) {
    this.seconds = seconds;
    this.#stamp = new Float64Array(seconds).fill(-1);
    this.#allowed = new Uint32Array(seconds);
    this.#denied = new Uint32Array(seconds);
  }

  /** Counts one decision in epoch second `second`. */
  record(second: number, allowed: boolean): void {
    const slot = second % this.seconds;
    if (this.#stamp[slot] !== second) {
      this.#stamp[slot] = second;
      this.#allowed[slot] = 0;
      this.#denied[slot] = 0;
    }
    if (allowed) this.#allowed[slot] = (this.#allowed[slot] as number) + 1;
    else this.#denied[slot] = (this.#denied[slot] as number) + 1;
  }

  /** The last `seconds` seconds up to and including `now` (an epoch second). */
  series(now: number): Series {
    const start = now - this.seconds + 1;
    const allowed = new Array<number>(this.seconds).fill(0);
    const denied = new Array<number>(this.seconds).fill(0);
    for (let s = start; s <= now; s++) {
      const slot = s % this.seconds;
      if (this.#stamp[slot] !== s) continue;
      allowed[s - start] = this.#allowed[slot] as number;
      denied[s - start] = this.#denied[slot] as number;
    }
    return { start, allowed, denied };
  }
}

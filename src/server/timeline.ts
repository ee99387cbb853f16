/**
 * Admitted, denied and failed decisions per second over the last few minutes, in a fixed ring
 * of one slot per second: memory is the same after an hour or a year, and a second with no
 * traffic costs nothing (a slot is recognised as stale by the second it holds).
 */

/** How one decision ended: the limit admitted or denied it, or the store failed and its policy answered. */
export type Outcome = "allowed" | "denied" | "failure";

/** The counts of the last `seconds` whole seconds, oldest first: each entry is a count per second. */
export interface Series {
  /** Epoch second of the first slot. */
  start: number;
  allowed: number[];
  denied: number[];
  /** Answered by the store's failure policy (an outage, not the limit): never among `denied`. */
  failed: number[];
}

/** One ring (one rule tier's). */
export class Timeline {
  readonly seconds: number;
  readonly #stamp: Float64Array;
  /** Per slot, the three outcomes' counts side by side. */
  readonly #counts: Uint32Array;

  constructor(seconds = 300) {
    this.seconds = seconds;
    this.#stamp = new Float64Array(seconds).fill(-1);
    this.#counts = new Uint32Array(seconds * 3);
  }

  /** Counts one decision in epoch second `second`. */
  record(second: number, outcome: Outcome): void {
    const slot = second % this.seconds;
    if (this.#stamp[slot] !== second) {
      this.#stamp[slot] = second;
      this.#counts.fill(0, slot * 3, slot * 3 + 3);
    }
    const at = slot * 3 + (outcome === "allowed" ? 0 : outcome === "denied" ? 1 : 2);
    this.#counts[at] = (this.#counts[at] as number) + 1;
  }

  /** The last `seconds` seconds up to and including `now` (an epoch second). */
  series(now: number): Series {
    const start = now - this.seconds + 1;
    const allowed = new Array<number>(this.seconds).fill(0);
    const denied = new Array<number>(this.seconds).fill(0);
    const failed = new Array<number>(this.seconds).fill(0);
    for (let s = start; s <= now; s++) {
      const slot = s % this.seconds;
      if (this.#stamp[slot] !== s) continue;
      allowed[s - start] = this.#counts[slot * 3] as number;
      denied[s - start] = this.#counts[slot * 3 + 1] as number;
      failed[s - start] = this.#counts[slot * 3 + 2] as number;
    }
    return { start, allowed, denied, failed };
  }
}

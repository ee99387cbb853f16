/**
 * One member's state table: key → state record, kept in two generations so that state which
 * has become equivalent to a fresh key is dropped wholesale, with no timer and no scan.
 *
 * Every access moves a key into the current generation. A generation spans at least the
 * algorithm's horizon (the longest any state stays different from fresh after its last
 * change), so when the current generation is rotated out twice without the key being touched,
 * its state is provably fresh and dropping it changes no decision. Memory is therefore bounded
 * by the keys active within the last two horizons, and a hot key costs one `Map.get`.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";

/** The state records of one rule member. */
export class Table {
  /** The member's step (replaced when a rule update keeps this table's state). */
  algorithm: Algorithm;
  /** Bindings using this table; it is dropped when the last one is released. */
  refs = 0;
  /** The clock its instants come from (undefined: the system clock). */
  clock: unknown;
  private current = new Map<string, unknown>();
  private previous = new Map<string, unknown>();
  private rotateAt = Number.NEGATIVE_INFINITY;

  constructor(algorithm: Algorithm) {
    this.algorithm = algorithm;
  }

  /** Live records (current and previous generation). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** Drops generations that have become fresh by `now` (the same test every access makes). */
  expire(now: number): void {
    if (now >= this.rotateAt) this.rotate(now);
  }

  /** The record for `key`, moved into the current generation, or undefined. */
  get(key: string, now: number): unknown {
    if (now >= this.rotateAt) this.rotate(now);
    const state = this.current.get(key);
    if (state !== undefined || this.previous.size === 0) return state;
    const old = this.previous.get(key);
    if (old !== undefined) {
      this.previous.delete(key);
      this.current.set(key, old);
    }
    return old;
  }

  /** The record for `key` without moving it (for peeks). */
  find(key: string): unknown {
    return this.current.get(key) ?? this.previous.get(key);
  }

  /** Stores a new record for `key` in the current generation. */
  set(key: string, state: unknown): void {
    this.current.set(key, state);
  }

  /** Forgets `key`. */
  delete(key: string): boolean {
    const a = this.current.delete(key);
    const b = this.previous.delete(key);
    return a || b;
  }

  /** The records of one generation, least recently moved first. */
  generation(previous: boolean): IterableIterator<[string, unknown]> {
    return (previous ? this.previous : this.current).entries();
  }

  /** Moves `key` to the most-recent end (used to skip limited records during eviction). */
  touch(key: string, state: unknown): void {
    this.previous.delete(key);
    this.current.delete(key);
    this.current.set(key, state);
  }

  private rotate(now: number): void {
    const horizon = this.algorithm.horizonMs;
    // Untouched for a whole horizon: everything current is fresh too.
    if (now >= this.rotateAt + horizon) this.current = new Map();
    this.previous = this.current;
    this.current = new Map();
    this.rotateAt = now + horizon;
  }
}

/**
 * One rule's records: key → the key's one record (every member's state and the ban's), kept in
 * two generations so that records which have become equivalent to a fresh key are dropped
 * wholesale, with no timer and no scan.
 *
 * Every access moves a key into the current generation. A generation spans at least the
 * rule's horizon (the longest a record stays different from fresh after its last change), so
 * when the current generation is rotated out twice without the key being touched, its record
 * is provably fresh and dropping it changes no decision. Memory is therefore bounded by the
 * keys active within the last two horizons, and a hot key costs one `Map.get`. A composite's
 * members live in one record, so they are kept, dropped and evicted together.
 */
import type { CompiledRule } from "../../core/rule.ts";
import type { Sketch } from "./sketch.ts";

/** The records of one rule (one id and one shape). */
export class Table {
  /** The rule (replaced when a rule update keeps the shape, and so this table's records). */
  rule: CompiledRule;
  /**
   * The longest horizon of every rule bound to this table. Rules of one shape may differ in
   * horizon (a GCRA's burst): records written under the longer one must not be dropped by the
   * shorter one's rotation before they are fresh.
   */
  horizonMs: number;
  /** Bindings using this table; once none is left, a sweep drops it when its records are gone. */
  refs = 0;
  /** The clock its instants come from (undefined: the system clock). */
  clock: unknown;
  /** Where records pushed out under `maxKeys` are summarised (created at the first eviction). */
  sketch: Sketch | undefined = undefined;
  /** This table's index in the store's compact tier (0: none). */
  index = 0;
  /** Records of this table held in the compact tier. */
  compactSize = 0;
  /**
   * Keys reset while summarised (by fingerprint): until the instant, their summary is ignored
   * (it holds what the reset forgot), so the key decides as a fresh key.
   */
  pins = new Map<number, number>();
  private current = new Map<string, unknown>();
  private previous = new Map<string, unknown>();
  private rotateAt = Number.NEGATIVE_INFINITY;
  /**
   * Where `shift` left off. A Map keeps deleted entries as holes until it is rebuilt, so asking a
   * new iterator for the first entry after many shifts walks every hole: a kept iterator
   * (which follows the Map through deletions and rebuilds) makes each shift O(1).
   */
  private cursor: Iterator<[string, unknown]> | undefined = undefined;
  private cursorOf: Map<string, unknown> | undefined = undefined;

  /** The table's key in its store (rule id and shape). */
  readonly id: string;

  constructor(rule: CompiledRule, id = "") {
    this.id = id;
    this.rule = rule;
    this.horizonMs = rule.horizonMs;
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

  /**
   * Stores a record read back from a snapshot. Its last change is unknown, so the first
   * rotation waits until it is fresh (`freshAt`): a rotation before then would drop it.
   */
  adopt(key: string, state: unknown, freshAt: number): void {
    this.current.set(key, state);
    if (freshAt > this.rotateAt && Number.isFinite(freshAt)) this.rotateAt = freshAt;
  }

  /** Forgets `key`. */
  delete(key: string): boolean {
    const a = this.current.delete(key);
    const b = this.previous.delete(key);
    return a || b;
  }

  /** Removes and returns the least recently used record (previous generation first). */
  shift(): [string, unknown] | undefined {
    const generation = this.previous.size > 0 ? this.previous : this.current;
    if (generation.size === 0) return undefined;
    if (this.cursorOf !== generation) {
      this.cursor = generation.entries();
      this.cursorOf = generation;
    }
    let next = (this.cursor as Iterator<[string, unknown]>).next();
    if (next.done === true) {
      // Entries added after the cursor ran out: start over (the oldest are first again).
      this.cursor = generation.entries();
      next = this.cursor.next();
    }
    const entry = next.value as [string, unknown];
    generation.delete(entry[0]);
    return entry;
  }

  /** Every record (for snapshots), oldest first. */
  *entries(): IterableIterator<[string, unknown]> {
    yield* this.previous;
    yield* this.current;
  }

  private rotate(now: number): void {
    const horizon = this.horizonMs;
    // Untouched for a whole horizon: everything current is fresh too.
    if (now >= this.rotateAt + horizon) this.current = new Map();
    this.previous = this.current;
    this.current = new Map();
    this.rotateAt = now + horizon;
  }
}

/**
 * One rule's records: key → the key's one record (every member's state and the ban's), kept in
 * two generations so that records which have become equivalent to a fresh key are dropped
 * wholesale, with no timer and no scan; and, under a cap, in two segments so that a flood of
 * one-shot keys cannot push out the keys that come back (a segmented LRU).
 *
 * Every access moves a key into the current generation. A generation spans at least the
 * rule's horizon (the longest a record stays different from fresh after its last change), so
 * when the current generation is rotated out twice without the key being touched, its record
 * is provably fresh and dropping it changes no decision. Memory is therefore bounded by the
 * keys active within the last two horizons, and a hot key costs one `Map.get`. A composite's
 * members live in one record, so they are kept, dropped and evicted together.
 *
 * Segments (only when `protectedCap` is finite, i.e. the store is capped): a new key enters
 * `probation`; a key used again while held, or coming back from the compact tier, moves to
 * `main` (the protected segment). Evictions take probation's oldest first, so one-shot keys
 * churn through probation while returning keys stay; `main` holds at most `protectedCap`
 * records, its oldest going back to probation past that. Uncapped, every record lives in `main`
 * and a hit is the same single lookup.
 */
import type { CompiledRule } from "../../core/rule.ts";
import type { PackFrame } from "../compact/packed-codec.ts";
import type { Sketch } from "./sketch.ts";
import type { SummaryFilter } from "./summary-filter.ts";

/**
 * An empty generation, shared and never written: a table allocates a Map only when a record
 * arrives, so an idle or unbound table (thousands of Envoy override rules) holds none.
 */
const EMPTY = new Map<string, unknown>();

/**
 * Rotations of every table so far (in every store): a store counts its tables' records again
 * only after one (a rotation is the only way a table drops records behind its store's back), so
 * a full store's insert is O(1), not a walk of its rules.
 */
export const rotations = { count: 0 };

/** One segment: two generations, oldest first, with a kept cursor for O(1) shifts. */
class Segment {
  current = EMPTY;
  previous = EMPTY;
  /**
   * Where `shift` left off. A Map keeps deleted entries as holes until it is rebuilt, so asking a
   * new iterator for the first entry after many shifts walks every hole: a kept iterator
   * (which follows the Map through deletions and rebuilds) makes each shift O(1).
   */
  private cursor: Iterator<[string, unknown]> | undefined = undefined;
  private cursorOf: Map<string, unknown> | undefined = undefined;

  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** The record for `key` without moving it. */
  find(key: string): unknown {
    const found = this.current.get(key);
    return found !== undefined || this.previous.size === 0 ? found : this.previous.get(key);
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

  /** Stores `state` for `key` in the current generation. */
  put(key: string, state: unknown): void {
    if (this.current === EMPTY) this.current = new Map();
    this.current.set(key, state);
  }

  /** Drops the previous generation (and the current one too when `all`). */
  rotate(all: boolean): void {
    this.previous = all ? EMPTY : this.current;
    this.current = EMPTY;
  }
}

const EMPTY_PINS = new Map<number, number>();
/** The probation of every table that has none yet: always empty, never written (see `newcomers`). */
const NO_PROBATION = new Segment();

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
  /** Until this instant the summary filter cannot tell which keys `sketch` holds (cells restored from a snapshot). */
  unfilteredUntil = Number.NEGATIVE_INFINITY;
  /**
   * Until this instant some of its compact records may sit where a restore placed them, by
   * fingerprint (another tier size or index: compact-table.ts `claimRestored`): lookups look
   * there too. Past it every such record is fresh.
   */
  restoredUntil = Number.NEGATIVE_INFINITY;
  /**
   * Until this instant its summary holds cells restored from a snapshot whose keys only
   * `savedFilter` (the saved store's filter, of another size or index) knows, at
   * `savedFilterIndex`: a key it may hold reads the summary.
   */
  savedFilterUntil = Number.NEGATIVE_INFINITY;
  /** The saved filter of `savedFilterUntil` (undefined: none). */
  savedFilter: SummaryFilter<string> | undefined = undefined;
  /** This table's index in `savedFilter` (its keys' probes hash it in). */
  savedFilterIndex = 0;
  /** This table's index in the store's compact tier (0: none). */
  index = 0;
  /** Records of this table held in the compact tier. */
  compactSize = 0;
  /**
   * Where its packed compact records' instants are measured from (a composite's or a ban's:
   * packed-codec.ts), set at its first packed write and moved by pack-frame.ts.
   */
  frame: PackFrame | undefined = undefined;
  /**
   * Keys reset while summarised (by fingerprint): until the instant, their summary is ignored
   * (it holds what the reset forgot), so the key decides as a fresh key.
   */
  pins: Map<number, number> = EMPTY_PINS;
  /**
   * Keys blocked by `block(key, ms)` on a rule without a ban, and when each block ends
   * (core/block.ts); undefined while none is: checks then test this one field and nothing more.
   * Held exactly, outside the tiers (a block is never evicted nor summarised), until it ends.
   */
  blocks: Map<string, number> | undefined = undefined;
  /** Most records in the protected segment (Infinity: unsegmented, every record is in `main`). */
  protectedCap = Number.POSITIVE_INFINITY;
  /** Records moved from probation to the protected segment. */
  promoted = 0;
  /**
   * Whether the record the last `shift` returned is a returning key's: from the protected
   * segment, or demoted from it into probation (see `cameBack`).
   */
  shiftedProtected = false;
  /**
   * Once no binding is left (`refs` 0), when every record it holds is fresh: nothing changes an
   * unbound table's records, so its last change was before the release.
   */
  quietAt = Number.POSITIVE_INFINITY;
  /** The protected segment (uncapped: every record). */
  private main = new Segment();
  /** New keys under a cap, until used again (the shared empty `NO_PROBATION` until the first). */
  private probation = NO_PROBATION;
  /**
   * Keys in probation that came back before (demoted from the protected segment past its cap).
   * Why (issue 34): with more returning keys than the protected segment holds (`maxKeys: 100`,
   * 1,000 returning keys), each was demoted and then evicted as if it had come once, so the
   * compact tier did not protect it and a flood of one-shot keys pushed 16% of them on into the
   * summary (50% for sliding logs). Holds only keys in probation (pruned when it rotates).
   */
  private cameBack: Set<string> | undefined = undefined;
  private rotateAt = Number.NEGATIVE_INFINITY;

  /** The table's key in its store (rule id and shape). */
  readonly id: string;

  constructor(rule: CompiledRule, id = "") {
    this.id = id;
    this.rule = rule;
    this.horizonMs = rule.horizonMs;
  }

  /** Pins `id` (a fingerprint) until `until`. */
  pin(id: number, until: number): void {
    if (this.pins === EMPTY_PINS) this.pins = new Map();
    this.pins.set(id, until);
  }

  /** Live records (both segments, both generations). */
  get size(): number {
    return this.main.size + this.probation.size;
  }

  /** Live records in the protected segment. */
  get protectedSize(): number {
    return Number.isFinite(this.protectedCap) ? this.main.size : 0;
  }

  /** Notes that the last binding went at `now`: its records are all fresh one horizon later (or when a forced record is). */
  released(now: number): void {
    this.quietAt = Math.max(now + this.horizonMs, this.rotateAt);
  }

  /** Drops generations that have become fresh by `now` (the same test every access makes). */
  expire(now: number): void {
    if (now >= this.rotateAt) this.rotate(now);
  }

  /** The record for `key`, moved into the current generation (and out of probation), or undefined. */
  get(key: string, now: number): unknown {
    if (now >= this.rotateAt) this.rotate(now);
    const state = this.main.current.get(key);
    // The rest out of line: this head is on every check's path, inside V8's inlining budget.
    return state !== undefined ? state : this.getElsewhere(key);
  }

  /** `get` of a key not in the protected segment's current generation. */
  private getElsewhere(key: string): unknown {
    const main = this.main;
    const old = main.previous.size === 0 ? undefined : main.previous.get(key);
    if (old !== undefined) {
      main.previous.delete(key);
      main.put(key, old);
      return old;
    }
    const probation = this.probation;
    if (probation.size === 0) return undefined;
    const found = probation.find(key);
    if (found !== undefined) {
      // Used again while held: not a one-shot key.
      probation.delete(key);
      this.cameBack?.delete(key);
      this.promote(key, found);
    }
    return found;
  }

  /** The record for `key` without moving it (for peeks). */
  find(key: string): unknown {
    return this.main.find(key) ?? (this.probation.size === 0 ? undefined : this.probation.find(key));
  }

  /**
   * Stores a record for a key the table does not hold: in probation under a cap, unless it is
   * `returning` (it came back from another tier), then in the protected segment.
   */
  add(key: string, state: unknown, returning = false): void {
    if (!Number.isFinite(this.protectedCap)) this.main.put(key, state);
    else if (returning) this.promote(key, state);
    else this.newcomers().put(key, state);
  }

  /** Replaces the record of a key the table holds, in its segment and generation. */
  replace(key: string, state: unknown): void {
    for (const segment of [this.main, this.probation]) {
      if (segment.current.has(key)) segment.current.set(key, state);
      else if (segment.previous.has(key)) segment.previous.set(key, state);
      else continue;
      return;
    }
    this.add(key, state);
  }

  /**
   * Stores a record read back from a snapshot, or one whose rotation must wait (`#force`). Its
   * last change is unknown, so the first rotation waits until it is fresh (`freshAt`): a
   * rotation before then would drop it.
   */
  adopt(key: string, state: unknown, freshAt: number, returning = false): void {
    if (returning && this.find(key) === undefined) this.add(key, state, true);
    else this.replace(key, state);
    if (freshAt > this.rotateAt && Number.isFinite(freshAt)) this.rotateAt = freshAt;
  }

  /** Forgets `key`. */
  delete(key: string): boolean {
    const a = this.main.delete(key);
    const b = this.probation.size > 0 && this.probation.delete(key);
    if (b) this.cameBack?.delete(key);
    return a || b;
  }

  /**
   * Removes and returns the record to evict: probation's oldest, else the protected segment's
   * (`shiftedProtected` then says so: its key came back, and the compact tier protects it too).
   */
  shift(): [string, unknown] | undefined {
    const entry = this.probation.shift();
    if (entry === undefined) {
      this.shiftedProtected = true;
      return this.main.shift();
    }
    const cameBack = this.cameBack;
    this.shiftedProtected = cameBack !== undefined && cameBack.size > 0 && cameBack.delete(entry[0]);
    return entry;
  }

  /**
   * Every record (for snapshots), oldest first within each segment, probation's first; the flag
   * tells a record of the protected segment (under a cap: a key that came back).
   */
  *entries(): IterableIterator<[string, unknown, boolean]> {
    for (const [key, record] of this.probation.previous) yield [key, record, false];
    for (const [key, record] of this.probation.current) yield [key, record, false];
    const kept = Number.isFinite(this.protectedCap);
    for (const [key, record] of this.main.previous) yield [key, record, kept];
    for (const [key, record] of this.main.current) yield [key, record, kept];
  }

  /** The probation segment, to write to (created at the first write). */
  private newcomers(): Segment {
    if (this.probation === NO_PROBATION) this.probation = new Segment();
    return this.probation;
  }

  /** Into the protected segment; past its cap, its oldest goes back to probation (newest there). */
  private promote(key: string, state: unknown): void {
    this.promoted++;
    this.main.put(key, state);
    if (this.main.size > this.protectedCap) {
      const demoted = this.main.shift();
      if (demoted !== undefined) {
        this.newcomers().put(demoted[0], demoted[1]);
        (this.cameBack ??= new Set()).add(demoted[0]);
      }
    }
  }

  private rotate(now: number): void {
    rotations.count++;
    // Untouched for a whole horizon: everything current is fresh too.
    const all = now >= this.rotateAt + this.horizonMs;
    this.main.rotate(all);
    if (this.probation !== NO_PROBATION) this.probation.rotate(all);
    const back = this.cameBack;
    if (back !== undefined && back.size > 0) {
      // Keys the rotation dropped from probation are gone: forget their mark.
      for (const key of back) if (this.probation.find(key) === undefined) back.delete(key);
    }
    this.rotateAt = now + this.horizonMs;
  }
}

/**
 * What this process last saw of recent keys' rows, so a call can go straight to its
 * compare-and-set: a key this process wrote last is decided on what it wrote and committed in
 * one statement; if another process wrote since, the statement loses and brings the row back.
 * A guess never decides alone: a call that writes nothing confirms the version with a read,
 * unless a statement sent after the call began already did (`confirmedAt`): the row stood as
 * seen at an instant within the call, so a decision that writes nothing holds at that instant.
 * That is what lets one read answer a whole queue of denials on a hot key.
 * Bounded: past `max` keys the oldest are forgotten (a forgotten key costs one statement more).
 */

/** A row as last seen (version null: no row). */
export interface SeenRow {
  readonly version: string | null;
  readonly record: string | null;
  readonly blockedUntil: number | null;
  readonly expiresAt: number | null;
  /** The local instant (database-clock.ts `local()`) the statement that showed it was sent; -Infinity for a guess. */
  readonly confirmedAt: number;
}

/** No row, as a guess. */
export const NO_ROW: SeenRow = {
  version: null,
  record: null,
  blockedUntil: null,
  expiresAt: null,
  confirmedAt: Number.NEGATIVE_INFINITY,
};

/** The rows of up to `max` recent keys, oldest forgotten first. */
export class KnownRows {
  readonly #rows = new Map<string, SeenRow>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  /** What was last seen of `key`'s row (undefined: nothing known). */
  get(key: string): SeenRow | undefined {
    return this.#rows.get(key);
  }

  /** Records `row` as `key`'s row now (moving the key to the newest end). */
  set(key: string, row: SeenRow): void {
    this.#rows.delete(key);
    if (this.#max === 0) return;
    this.#rows.set(key, row);
    if (this.#rows.size > this.#max) this.#rows.delete(this.#rows.keys().next().value as string);
  }

  /** Forgets `key` (a reset). */
  delete(key: string): void {
    this.#rows.delete(key);
  }
}

/**
 * What this process last saw of recent keys' rows, so a call can go straight to its
 * compare-and-set: a key this process wrote last is decided on what it wrote and committed in
 * one statement; if another process wrote since, the statement loses and brings the row back.
 * A guess never decides alone: a call that writes nothing confirms the version with a read.
 * Bounded: past `max` keys the oldest are forgotten (a forgotten key costs one statement more).
 */

/** A row as last seen (version null: no row). */
export interface SeenRow {
  readonly version: string | null;
  readonly record: string | null;
  readonly blockedUntil: number | null;
  readonly expiresAt: number | null;
}

/** No row. */
export const NO_ROW: SeenRow = { version: null, record: null, blockedUntil: null, expiresAt: null };

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

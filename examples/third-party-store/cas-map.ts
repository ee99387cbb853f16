/**
 * A stand-in for a remote key-value service with compare-and-set (DynamoDB conditional writes,
 * etcd transactions, a Postgres row with a version column): every call is async and may
 * interleave with others; a write succeeds only if the item's version is still the one read.
 */
export interface Versioned {
  /** The stored text. */
  value: string;
  /** Bumped by every write. */
  version: number;
}

/** An async Map whose writes are compare-and-set. */
export class CasMap {
  readonly #items = new Map<string, Versioned>();

  /** The item, or undefined. */
  async get(key: string): Promise<Versioned | undefined> {
    await Promise.resolve(); // a network round trip: other calls run in between
    return this.#items.get(key);
  }

  /** Writes `value` if the item's version is `expected` (undefined: the item must not exist). */
  async compareAndSet(key: string, expected: number | undefined, value: string): Promise<boolean> {
    await Promise.resolve();
    const item = this.#items.get(key);
    if (item?.version !== expected) return false;
    this.#items.set(key, { value, version: (expected ?? 0) + 1 });
    return true;
  }

  /** Removes the item. */
  async delete(key: string): Promise<void> {
    await Promise.resolve();
    this.#items.delete(key);
  }
}

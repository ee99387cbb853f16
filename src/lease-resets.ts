/**
 * The resets a lease handle must respect. A lease is named by its key and its receipt, the
 * instant it was taken; after `reset(key)` a new holder taken in the same millisecond has the same
 * receipt, so the old decision's `release()` would free the new holder's slot (two holders of a
 * limit-1 key) and its `renew()` would move it. So each store keeps, in this process, the order
 * of the resets made through any limiter on it: a handle taken before its key's latest reset
 * frees and renews nothing (the reset already freed its slot).
 *
 * Bounded: the latest `RESETS_KEPT` keys reset are remembered; once one is forgotten, every
 * handle taken before that reset counts as reset (it frees nothing; its slot, if still held,
 * expires after `leaseMs`: never a second holder). A reset made by another process on a shared
 * store is not seen here (docs/concurrency.md).
 */

/** Distinct keys whose latest reset each store remembers. */
const RESETS_KEPT = 65_536;

/** One store's resets, in order. */
export class ResetLedger {
  /** Counts resets: a handle notes it when its lease is taken. */
  #epoch = 0;
  /** Handles taken before this epoch may predate a forgotten reset. */
  #floor = 0;
  /** Each remembered key's latest reset epoch, oldest first (a Map keeps insertion order). */
  readonly #latest = new Map<string, number>();

  /** The epoch to note with a lease taken now. */
  get epoch(): number {
    return this.#epoch;
  }

  /** `key` (rule id and stored key) was reset. */
  reset(key: string): void {
    const epoch = ++this.#epoch;
    this.#latest.delete(key);
    this.#latest.set(key, epoch);
    if (this.#latest.size > RESETS_KEPT) {
      for (const [oldest, at] of this.#latest) {
        this.#latest.delete(oldest);
        this.#floor = at;
        break;
      }
    }
  }

  /** Whether a lease of `key` taken at `epoch` may have been reset since. */
  resetSince(key: string, epoch: number): boolean {
    if (epoch < this.#floor) return true;
    const latest = this.#latest.get(key);
    return latest !== undefined && latest > epoch;
  }
}

const ledgers = new WeakMap<object, ResetLedger>();

/** The reset ledger of `store` (one per store, shared by every limiter on it in this process). */
export function resetLedgerOf(store: object): ResetLedger {
  let ledger = ledgers.get(store);
  if (ledger === undefined) ledgers.set(store, (ledger = new ResetLedger()));
  return ledger;
}

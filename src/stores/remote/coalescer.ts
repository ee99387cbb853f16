/**
 * Coalescing, shared by every remote store: the calls made in one event-loop turn travel
 * together, one batch per destination (a Redis Cluster slot, the cluster store's primary, the
 * service), so many calls in flight cost a few round trips instead of one each. A batch that
 * reaches `maxBatch` is sent at once, mid-turn (with many calls in flight, batches then
 * overlap: the server decides one while this process builds the next); the rest are sent on
 * the next macrotask.
 *
 * Per call the work is a map lookup and whatever the batch's own `add` does: no closure, no
 * timer. How a batch is sent (its transport) and bounded (withTimeout) is the store's.
 */

/** Runs `f` on the next macrotask: setImmediate where it exists, else a zero timeout (edge runtimes). */
export const nextTurn: (f: () => void) => void =
  typeof globalThis.setImmediate === "function" ? (f) => setImmediate(f) : (f) => setTimeout(f, 0);

/** What the coalescer needs of a batch. */
export interface Coalescible {
  /** Calls in the batch, measured against `maxBatch`. */
  readonly size: number;
}

/** Gathers one turn's calls into batches, one per destination `D`; `C` is what a new batch is made with. */
export class Coalescer<D, B extends Coalescible, C = undefined> {
  readonly #maxBatch: number;
  readonly #create: (context: C) => B;
  readonly #send: (batch: B) => void;
  #open = new Map<D, B>();
  #scheduled = false;
  readonly #flush = () => this.flush();

  /**
   * `create` makes an empty batch (given the context of its first call), `send` takes a full
   * or flushed batch away (it is no longer open), `maxBatch` bounds a batch's size.
   */
  constructor(create: (context: C) => B, send: (batch: B) => void, maxBatch = Number.POSITIVE_INFINITY) {
    this.#create = create;
    this.#send = send;
    this.#maxBatch = maxBatch;
  }

  /** The open batch for `destination`, made with `context` when none is open. Add to it, then call {@link added}. */
  open(destination: D, context: C): B {
    let batch = this.#open.get(destination);
    if (batch === undefined) {
      batch = this.#create(context);
      this.#open.set(destination, batch);
    }
    return batch;
  }

  /** After adding to `destination`'s open batch: sends it now if full, else makes sure this turn's flush is due. */
  added(destination: D, batch: B): void {
    if (batch.size >= this.#maxBatch) {
      this.#open.delete(destination);
      this.#send(batch);
    } else if (!this.#scheduled) {
      this.#scheduled = true;
      // The next macrotask (not a microtask), so calls issued by the continuations of one socket
      // read, several promise hops deep, all land in the same batch.
      nextTurn(this.#flush);
    }
  }

  /** Sends every open batch now (also what the scheduled flush runs). */
  flush(): void {
    this.#scheduled = false;
    if (this.#open.size === 0) return;
    const open = this.#open;
    this.#open = new Map();
    for (const batch of open.values()) this.#send(batch);
  }
}

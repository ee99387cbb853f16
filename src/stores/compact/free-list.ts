/**
 * A lock-free stack of free block indices (Treiber's stack) in shared memory. The head is one
 * 64-bit word: a tag that grows on every change above the top index + 1, so a thread that read
 * the head, was descheduled while other threads popped and pushed the same block back, cannot
 * succeed with its stale view (the ABA problem). A thread that dies between a pop and its use
 * leaks that block and nothing else; no step ever waits for another thread. Used by the shared
 * compact table (shared-table.ts) and the threads store's summary.
 */
/** The low 32 bits of a tagged word: block index + 1 (0: none). */
const LOW = 0xffffffffn;

/** The block index in a tagged word (-1: none). */
export function indexOf(word: bigint): number {
  return Number(word & LOW) - 1;
}

/** The word that replaces `word`: the next tag (so an old copy of the word never matches again) and `index`. */
export function nextWord(word: bigint, index: number): bigint {
  return BigInt.asIntN(64, ((word >> 32n) + 1n) << 32n) | BigInt(index + 1);
}

/** One pool's free list: `head` is a W index, links live at `I[next + block]` (-1: end). */
export class FreeList {
  readonly #W: BigInt64Array;
  readonly #I: Int32Array;
  readonly #head: number;
  readonly #next: number;

  /** The list whose head is `W[head]`, its links at `I[next + block]`. */
  constructor(W: BigInt64Array, I: Int32Array, head: number, next: number) {
    this.#W = W;
    this.#I = I;
    this.#head = head;
    this.#next = next;
  }

  /** Takes a free block; -1 when the pool is empty. */
  pop(): number {
    const W = this.#W;
    for (;;) {
      const head = Atomics.load(W, this.#head);
      const top = indexOf(head);
      if (top < 0) return -1;
      // A stale `next` (the block was popped meanwhile) only matters if the CAS succeeds, and the tag forbids that.
      const next = Atomics.load(this.#I, this.#next + top);
      if (Atomics.compareExchange(W, this.#head, head, nextWord(head, next)) === head) return top;
    }
  }

  /** Returns `block` to the pool. */
  push(block: number): void {
    const W = this.#W;
    for (;;) {
      const head = Atomics.load(W, this.#head);
      Atomics.store(this.#I, this.#next + block, indexOf(head));
      if (Atomics.compareExchange(W, this.#head, head, nextWord(head, block)) === head) return;
    }
  }

  /** Blocks on the list now (a walk: for stats only, and only exact when nothing moves). */
  count(limit: number): number {
    let n = 0;
    let at = indexOf(Atomics.load(this.#W, this.#head));
    while (at >= 0 && n < limit) {
      n++;
      at = Atomics.load(this.#I, this.#next + at);
    }
    return n;
  }
}

/**
 * The waiting line of one key: ten FIFO lists, one per priority (0 first), each a doubly linked
 * list threaded through the jobs themselves, so push, take and removal from anywhere (an abort,
 * an expiry) are O(1) and allocate nothing. Within a priority, arrival order (`seq`) decides.
 */

/** What the queue threads its lists through. */
export interface QueueNode {
  /** 0 (first) to 9. */
  readonly priority: number;
  /** Arrival order: lower came first. */
  readonly seq: number;
  /** @internal */
  prev: QueueNode | undefined;
  /** @internal */
  next: QueueNode | undefined;
  /** Whether the node is in a queue now. */
  queued: boolean;
}

const LEVELS = 10;
/** The shared placeholder of a queue that never held a job (never written to). */
const EMPTY: ReadonlyArray<undefined> = Object.freeze(new Array(LEVELS).fill(undefined));

/** Ten FIFO lists, highest priority (0) served first. */
export class PriorityQueue<T extends QueueNode> {
  // Made on the first job: most keys live for one job, and a short line needs no arrays.
  #heads: Array<T | undefined> = EMPTY as Array<T | undefined>;
  #tails: Array<T | undefined> = EMPTY as Array<T | undefined>;
  #size = 0;

  /** Jobs waiting. */
  get size(): number {
    return this.#size;
  }

  /** Appends `node` behind the jobs of its priority. */
  push(node: T): void {
    if (this.#heads === EMPTY) this.#allocate();
    const p = node.priority;
    const tail = this.#tails[p];
    node.prev = tail;
    node.next = undefined;
    if (tail === undefined) this.#heads[p] = node;
    else tail.next = node;
    this.#tails[p] = node;
    node.queued = true;
    this.#size++;
  }

  /**
   * Puts `node` back where its arrival order places it among its priority (a request sent again
   * after an upstream's pause keeps its place ahead of later arrivals).
   */
  insertInOrder(node: T): void {
    if (this.#heads === EMPTY) this.#allocate();
    const p = node.priority;
    let after = this.#tails[p];
    while (after !== undefined && after.seq > node.seq) after = after.prev as T | undefined;
    if (after === this.#tails[p]) {
      this.push(node);
      return;
    }
    const before = (after === undefined ? this.#heads[p] : after.next) as T;
    node.prev = after;
    node.next = before;
    before.prev = node;
    if (after === undefined) this.#heads[p] = node;
    else after.next = node;
    node.queued = true;
    this.#size++;
  }

  #allocate(): void {
    this.#heads = new Array(LEVELS).fill(undefined);
    this.#tails = new Array(LEVELS).fill(undefined);
  }

  /** The job served next (not removed), or undefined when empty. */
  peek(): T | undefined {
    if (this.#size === 0) return undefined;
    for (let p = 0; p < LEVELS; p++) {
      const head = this.#heads[p];
      if (head !== undefined) return head;
    }
    return undefined;
  }

  /** Takes `node` out of the queue wherever it is; false when it was not queued. */
  remove(node: T): boolean {
    if (!node.queued) return false;
    const p = node.priority;
    if (node.prev === undefined) this.#heads[p] = node.next as T | undefined;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tails[p] = node.prev as T | undefined;
    else node.next.prev = node.prev;
    node.prev = node.next = undefined;
    node.queued = false;
    this.#size--;
    return true;
  }

  /** Every queued job in serving order (for close and tests). */
  *[Symbol.iterator](): IterableIterator<T> {
    for (let p = 0; p < LEVELS; p++) {
      for (let n = this.#heads[p]; n !== undefined; n = n.next as T | undefined) yield n;
    }
  }
}

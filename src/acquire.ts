/**
 * `acquire`: wait for a permit instead of failing fast. Waiters on one key are served in
 * arrival order; each sleeps exactly the `retryAfterMs` its check returned, so nobody polls
 * and nobody sleeps longer than needed.
 */

import type { Decision } from "./algorithms/decision.ts";
import { abortReason, type Clock, sleep } from "./core/clock.ts";
import { ArgumentError, WaitTimeoutError } from "./core/errors.ts";

/** Options of `limiter.acquire`. */
export interface AcquireOptions {
  /** Units to take (default 1). */
  cost?: number;
  /** Give up with WaitTimeoutError rather than wait longer than this (default: no bound). */
  maxWaitMs?: number;
  /** Abort the wait; the promise rejects with the signal's reason (an AbortError by default). */
  signal?: AbortSignal;
}

interface Waiter {
  wake: () => void;
}

/** FIFO queues of waiters, one per key. */
export class WaitQueues {
  #queues = new Map<string, Waiter[]>();

  /**
   * Waits (FIFO per key) until `attempt` allows. `attempt` is the limiter's own `tryAcquire`;
   * `clock` measures the waits. With `pollMs` (leases: a denial's retryAfterMs is only an upper
   * bound, and a release is announced to no one) it tries again every `pollMs` until then, and
   * gives up only once `maxWaitMs` has passed.
   */
  async acquire(
    key: string,
    options: AcquireOptions,
    clock: Clock,
    attempt: (cost: number) => Decision | Promise<Decision>,
    pollMs?: number,
  ): Promise<Decision> {
    const { cost = 1, maxWaitMs = Number.POSITIVE_INFINITY, signal } = options;
    if (typeof maxWaitMs !== "number" || Number.isNaN(maxWaitMs) || maxWaitMs < 0) {
      throw new ArgumentError(`\`maxWaitMs\` must be a number ≥ 0 (got ${String(maxWaitMs)})`);
    }
    if (signal?.aborted) throw abortReason(signal);
    const deadline = clock.now() + maxWaitMs;
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = [];
      this.#queues.set(key, queue);
    }
    const me: Waiter = { wake: () => {} };
    queue.push(me);
    try {
      if (queue[0] !== me) await this.#turn(me, signal);
      for (;;) {
        // The hint is relative to when the check ran, not to when its (possibly async) answer arrived.
        const at = clock.now();
        const result = await attempt(cost);
        if (result.allowed) return result;
        if (!Number.isFinite(result.retryAfterMs)) {
          throw new WaitTimeoutError(
            `cost ${cost} exceeds the limit ${result.limit} of ${JSON.stringify(key)}: it can never pass`,
          );
        }
        const passesAt = at + result.retryAfterMs;
        if (pollMs === undefined && passesAt > deadline) {
          throw new WaitTimeoutError(
            `${JSON.stringify(key)} needs ${result.retryAfterMs} ms more, past \`maxWaitMs\` (${maxWaitMs} ms)`,
          );
        }
        const now = clock.now();
        if (pollMs !== undefined && now >= deadline) {
          throw new WaitTimeoutError(`${JSON.stringify(key)}: no slot was free within \`maxWaitMs\` (${maxWaitMs} ms)`);
        }
        const wakeAt = pollMs === undefined ? passesAt : Math.min(passesAt, now + pollMs, deadline);
        await sleep(clock, Math.max(0, wakeAt - now), signal);
      }
    } finally {
      const i = queue.indexOf(me);
      if (i >= 0) queue.splice(i, 1);
      if (queue.length === 0) {
        if (this.#queues.get(key) === queue) this.#queues.delete(key);
      } else if (i === 0) {
        (queue[0] as Waiter).wake();
      }
    }
  }

  /** Resolves when `me` reaches the head of its queue; rejects when aborted meanwhile. */
  #turn(me: Waiter, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(abortReason(signal as AbortSignal));
      me.wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

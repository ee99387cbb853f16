/**
 * `acquire`: wait for a permit instead of failing fast. Waiters on one key are served in
 * arrival order; each sleeps exactly the `retryAfterMs` its check returned, so nobody polls
 * and nobody sleeps longer than needed. Leases are the exception: a denial's retryAfterMs (the
 * oldest lease's expiry) is only an upper bound, since a holder may release any time. A release
 * in this process wakes the key's first waiter at once (`wake`); only releases this process
 * cannot see (another process's, on a shared store) are found by trying again every `pollMs`.
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
  /** Lets it take its turn (it reached the head of its queue). */
  wake: () => void;
  /** Ends its current sleep early (a slot was freed); set while it sleeps. */
  kick: (() => void) | undefined;
  /** A slot was freed while it was not sleeping: its next sleep ends at once. */
  kicked: boolean;
}

/** The reason a sleep ended early because a slot was freed (never seen outside this module). */
const KICK = Symbol("slot freed");

/** FIFO queues of waiters, one per key. */
export class WaitQueues {
  #queues = new Map<string, Waiter[]>();
  /** Called when no key has a waiter left (the registry then forgets these queues). */
  readonly #onIdle: (() => void) | undefined;

  constructor(onIdle?: () => void) {
    this.#onIdle = onIdle;
  }

  /** Tells the registry when nothing waits here any more. */
  #idle(): void {
    if (this.#queues.size === 0) this.#onIdle?.();
  }

  /**
   * Waits (FIFO per key) until `attempt` allows. `attempt` is the limiter's own `tryAcquire`;
   * `clock` measures the waits. With `pollMs` (leases: a denial's retryAfterMs is only an upper
   * bound) it gives up only once `maxWaitMs` has passed, is woken by `wake(key)`, and tries
   * again at least every `pollMs` (Infinity: every release is seen by `wake`, as on a store in
   * this process alone).
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
      this.#idle();
      throw new ArgumentError(`\`maxWaitMs\` must be a number ≥ 0 (got ${String(maxWaitMs)})`);
    }
    if (signal?.aborted) {
      this.#idle();
      throw abortReason(signal);
    }
    const deadline = clock.now() + maxWaitMs;
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = [];
      this.#queues.set(key, queue);
    }
    const me: Waiter = { wake: () => {}, kick: undefined, kicked: false };
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
        if (pollMs === undefined) {
          await sleep(clock, Math.max(0, passesAt - now), signal);
          continue;
        }
        await this.#nap(me, Math.max(0, Math.min(passesAt, now + pollMs, deadline) - now), clock, signal);
      }
    } finally {
      const i = queue.indexOf(me);
      if (i >= 0) queue.splice(i, 1);
      if (queue.length === 0) {
        if (this.#queues.get(key) === queue) this.#queues.delete(key);
        this.#idle();
      } else if (i === 0) {
        (queue[0] as Waiter).wake();
      }
    }
  }

  /**
   * A slot of `key` was freed in this process (a release, a reset): the key's
   * first waiter tries again now; if it takes the slot, the next one's turn follows.
   */
  wake(key: string): void {
    const first = this.#queues.get(key)?.[0];
    if (first === undefined) return;
    if (first.kick !== undefined) first.kick();
    else first.kicked = true;
  }

  /** Sleeps `ms` on `clock`, or until `wake` kicks `me`; rejects when aborted. */
  async #nap(me: Waiter, ms: number, clock: Clock, signal: AbortSignal | undefined): Promise<void> {
    if (me.kicked) {
      me.kicked = false;
      return;
    }
    if (signal?.aborted) throw abortReason(signal);
    const stop = new AbortController();
    const onAbort = () => stop.abort(abortReason(signal as AbortSignal));
    signal?.addEventListener("abort", onAbort, { once: true });
    me.kick = () => stop.abort(KICK);
    try {
      await sleep(clock, ms, stop.signal);
    } catch (error) {
      if (error !== KICK) throw error;
    } finally {
      me.kick = undefined;
      signal?.removeEventListener("abort", onAbort);
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

/** Wait queues by store and rule id: limiters sharing state share waiters (and wake each other). */
const shared = new WeakMap<object, Map<string, WaitQueues>>();

/**
 * The wait queues of rule `id` on `store`: one per (store, id), so a release through any limiter
 * of the rule (one replaced by updateRule, a second with the same name) wakes the rule's waiters.
 */
export function waitQueuesOf(store: object, id: string): WaitQueues {
  let byId = shared.get(store);
  if (byId === undefined) shared.set(store, (byId = new Map()));
  const map = byId;
  let queues = map.get(id);
  if (queues === undefined) {
    // Forgotten once nothing waits: a service creating rules by the thousand (Envoy overrides,
    // tiers) must not keep one entry per rule it ever built.
    const created: WaitQueues = new WaitQueues(() => {
      if (map.get(id) === created) map.delete(id);
    });
    map.set(id, created);
    queues = created;
  }
  return queues;
}

/** A slot of `key` in rule `id` on `store` was freed: wakes its first waiter, if any waits. */
export function wakeWaiter(store: object, id: string, key: string): void {
  shared.get(store)?.get(id)?.wake(key);
}

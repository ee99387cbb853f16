/**
 * Progress of a throttle: events (`on`/`off`) and an async iterator of job outcomes, so a caller
 * can drive a progress bar or a log. Listeners run synchronously; what one throws is reported
 * with `process.emitWarning` and never reaches the job or the queue.
 */
import { warn } from "../core/warn.ts";

/** How a job ended. */
export type OutcomeStatus = "done" | "failed" | "expired" | "aborted" | "closed";

/** One finished job. */
export interface JobOutcome {
  /** The job's key. */
  key: string;
  priority: number;
  cost: number;
  /** `done`: resolved; `failed`: the task threw; `expired`: `maxWaitMs` or `timeoutMs` ran out; `aborted`: its signal; `closed`: the throttle closed. */
  status: OutcomeStatus;
  /** The error the caller's promise rejected with (absent when done). */
  error?: unknown;
  /** ms from `schedule` to start (or to the end, for a job that never started). */
  waitedMs: number;
  /** ms the task ran (absent for a job that never started). */
  ranMs?: number;
}

/** The events a throttle emits, with what each listener receives. */
export interface ThrottleEvents {
  /** A job entered a queue. */
  queued: { key: string; priority: number; cost: number };
  /**
   * A job started. `at` is the instant its rate units were decided (the rate decision's `at`, on
   * the throttle's clock; without a rate, or on a store's own time, when the permit was asked for).
   */
  start: { key: string; priority: number; cost: number; waitedMs: number; at: number };
  /** A job finished, any way (the same object the outcome iterator yields). */
  outcome: JobOutcome;
  /** A key was paused (by `pause`, or an upstream's answer) for `ms`. */
  pause: { key: string; ms: number; reason: string };
  /** Nothing is queued or running any more. */
  idle: Record<string, never>;
  /** A store call behind the queue failed (the job keeps waiting; a lease still expires on its own). */
  error: { key: string; error: unknown };
}

type Listener<E extends keyof ThrottleEvents> = (event: ThrottleEvents[E]) => void;

/** A small typed emitter (no `error` special case: an unheard error event throws nothing). */
export class Emitter {
  #listeners = new Map<keyof ThrottleEvents, Array<(event: never) => void>>();

  /** Whether anything listens to `name` (so the hot path builds no event nobody reads). */
  has(name: keyof ThrottleEvents): boolean {
    return this.#listeners.has(name);
  }

  /** Adds a listener. */
  on<E extends keyof ThrottleEvents>(name: E, listener: Listener<E>): void {
    const list = this.#listeners.get(name) ?? [];
    list.push(listener as (event: never) => void);
    this.#listeners.set(name, list);
  }

  /** Removes a listener added with `on`. */
  off<E extends keyof ThrottleEvents>(name: E, listener: Listener<E>): void {
    const list = this.#listeners.get(name);
    if (list === undefined) return;
    const rest = list.filter((l) => l !== listener);
    if (rest.length === 0) this.#listeners.delete(name);
    else this.#listeners.set(name, rest);
  }

  /** Calls every listener of `name`. */
  emit<E extends keyof ThrottleEvents>(name: E, event: ThrottleEvents[E]): void {
    const list = this.#listeners.get(name);
    if (list === undefined) return;
    for (const listener of [...list]) {
      try {
        (listener as Listener<E>)(event);
      } catch (error) {
        warn(`a throttle \`${name}\` listener threw: ${String(error)}`, "SLUICE_THROTTLE_LISTENER");
      }
    }
  }
}

/**
 * The outcomes emitted from now until `closed` resolves, as an async iterator. Outcomes not yet
 * read are buffered (the iterator is the caller's to drain); `return()` (a `break`) unsubscribes.
 */
export function outcomeIterator(emitter: Emitter, closed: Promise<void>): AsyncIterableIterator<JobOutcome> {
  const buffer: JobOutcome[] = [];
  let waiting: ((r: IteratorResult<JobOutcome>) => void) | undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    emitter.off("outcome", push);
    waiting?.({ value: undefined, done: true });
    waiting = undefined;
  };
  const push = (o: JobOutcome) => {
    if (waiting !== undefined) {
      const w = waiting;
      waiting = undefined;
      w({ value: o, done: false });
    } else buffer.push(o);
  };
  emitter.on("outcome", push);
  void closed.then(finish);
  return {
    next(): Promise<IteratorResult<JobOutcome>> {
      const o = buffer.shift();
      if (o !== undefined) return Promise.resolve({ value: o, done: false });
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => {
        waiting = resolve;
      });
    },
    return(): Promise<IteratorResult<JobOutcome>> {
      finish();
      buffer.length = 0;
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * What a throttle counts: this process's jobs by state and outcome. It settles each caller's
 * promise exactly once (counting it and emitting its outcome), and tells the throttle when
 * nothing is queued, running or being given back to the store (the `idle` event, `close`).
 */
import type { Clock } from "../core/clock.ts";
import type { Emitter, JobOutcome, OutcomeStatus } from "./events.ts";
import type { Job } from "./job.ts";

/** `throttle.stats()`: this process's jobs. */
export interface ThrottleStats {
  /** Waiting to start. */
  queued: number;
  /** Started and not yet settled. */
  running: number;
  /** Resolved. */
  done: number;
  /** Rejected: the task threw, its signal aborted, or the throttle closed before it ran. */
  failed: number;
  /** Ran out of time: `maxWaitMs` while waiting (or a cost that can never pass), `timeoutMs` while running. */
  expired: number;
}

/** The counters, the settling of jobs and the idle signal. */
export class Ledger {
  queued = 0;
  running = 0;
  /** Permits or slots being given back to the store (the throttle is not idle until they are). */
  releasing = 0;
  done = 0;
  failed = 0;
  expired = 0;
  /** Work arrived since the last `idle` event. */
  #busy = false;
  #onIdle: (() => void) | undefined;

  constructor(
    private readonly events: Emitter,
    private readonly clock: Clock,
  ) {}

  /** The counts `stats()` reports. */
  stats(): ThrottleStats {
    return { queued: this.queued, running: this.running, done: this.done, failed: this.failed, expired: this.expired };
  }

  /** A job entered a queue. */
  enqueued(): void {
    this.queued++;
    this.#busy = true;
  }

  /** Settles the caller's promise once and counts the outcome. */
  settle(job: Job, valueOrError: unknown, status: OutcomeStatus): void {
    if (job.settled) return;
    job.settled = true;
    if (status === "done") {
      this.done++;
      job.resolve(valueOrError);
    } else {
      if (status === "expired") this.expired++;
      else this.failed++;
      job.reject(valueOrError);
    }
    if (!this.events.has("outcome")) return;
    const end = this.clock.now();
    const outcome: JobOutcome = {
      key: job.key,
      priority: job.priority,
      cost: job.cost,
      status,
      waitedMs: (job.started ? job.startedAt : end) - job.enqueuedAt,
    };
    if (status !== "done") outcome.error = valueOrError;
    if (job.started) outcome.ranMs = end - job.startedAt;
    this.events.emit("outcome", outcome);
  }

  /** Calls `then` once the throttle is next idle (for `close`). */
  whenIdle(then: () => void): void {
    this.#onIdle = then;
  }

  /** Emits `idle` (once per busy spell) and runs a pending `whenIdle` when nothing is left. */
  checkIdle(): void {
    if (this.queued !== 0 || this.running !== 0 || this.releasing !== 0) return;
    if (this.#busy) {
      this.#busy = false;
      if (this.events.has("idle")) this.events.emit("idle", {});
    }
    if (this.#onIdle !== undefined) {
      const onIdle = this.#onIdle;
      this.#onIdle = undefined;
      onIdle();
    }
  }
}

/**
 * One scheduled job: its place in a queue, its caller's promise, and the signal its task sees.
 * The task's signal is made only when the task reads it (most tasks never do), and aborts when
 * the caller's signal does or when `timeoutMs` runs out.
 */

import type { FleetGrant } from "../core/fleet-queue.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { JobOptions } from "./options.ts";
import type { QueueNode } from "./priority-queue.ts";

/** What a task receives. */
export interface TaskContext {
  /** Aborted when the caller's signal aborts or the job's `timeoutMs` runs out. */
  readonly signal: AbortSignal;
}

/** A task: called with its context once the throttle allows it; its result settles the caller's promise. */
export type Task<R> = (context: TaskContext) => R | PromiseLike<R>;

/** A job from `schedule` to its end. */
export class Job implements QueueNode {
  prev: QueueNode | undefined = undefined;
  next: QueueNode | undefined = undefined;
  queued = false;
  /** Its permit is being decided right now (a remote store's answer is in flight). */
  deciding = false;
  /** The caller's promise has settled. */
  settled = false;
  /** Started during its key's cool-down (the one job it runs at a time: Pauses.cooling). */
  cooled = false;
  /** The task was started (it holds its permit until it settles). */
  started = false;
  enqueuedAt = 0;
  startedAt = 0;
  cancelExpiry: (() => void) | undefined = undefined;
  cancelTimeout: (() => void) | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;
  keeper: LeaseKeeper | undefined = undefined;
  /** A fleet grant it holds until its due instant (granted ahead), and the timer that starts it. */
  grant: FleetGrant | undefined = undefined;
  cancelHold: (() => void) | undefined = undefined;
  /** This process's instant its grant was due (heard, plus its delay): how late its task starts is measured from it. */
  dueAt = 0;
  /** Why the task's signal aborted on the throttle's side (its timeout, a lost lease). */
  aborted: unknown = undefined;
  #controller: AbortController | undefined = undefined;
  #forward: (() => void) | undefined = undefined;

  constructor(
    readonly seq: number,
    readonly key: string,
    readonly options: JobOptions,
    readonly task: Task<unknown>,
    readonly resolve: (value: unknown) => void,
    readonly reject: (error: unknown) => void,
  ) {}

  /** 0 (first) to 9. */
  get priority(): number {
    return this.options.priority;
  }

  /** Units of rate the job takes. */
  get cost(): number {
    return this.options.cost;
  }

  /** The task's signal, made on first read. */
  signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      const outer = this.options.signal;
      if (this.aborted !== undefined) controller.abort(this.aborted);
      else if (outer?.aborted) controller.abort(outer.reason);
      else if (outer !== undefined) {
        this.#forward = () => controller.abort(outer.reason);
        outer.addEventListener("abort", this.#forward, { once: true });
      }
    }
    return this.#controller.signal;
  }

  /** Aborts the task's signal (if the task has one) with `reason`. */
  abortTask(reason: unknown): void {
    this.#controller?.abort(reason);
  }

  /** Drops the listeners the job put on the caller's signal. */
  unlisten(): void {
    const outer = this.options.signal;
    if (outer === undefined) return;
    if (this.onAbort !== undefined) outer.removeEventListener("abort", this.onAbort);
    if (this.#forward !== undefined) outer.removeEventListener("abort", this.#forward);
    this.onAbort = this.#forward = undefined;
  }
}

/** The context a task is called with: the signal is the job's, made when first read. */
export class TaskContextOf implements TaskContext {
  readonly #job: Job;
  constructor(job: Job) {
    this.#job = job;
  }

  /** Aborted when the caller's signal aborts or the job's `timeoutMs` runs out. */
  get signal(): AbortSignal {
    return this.#job.signal();
  }
}

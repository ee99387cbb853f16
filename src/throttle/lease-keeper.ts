/**
 * A running job's slot: renewed every `leaseMs / 3` while the task runs (so two renewals may
 * fail before another process could take it), released once when it settles. A process killed
 * mid-task renews nothing, and its slot frees itself `leaseMs` later.
 */
import { after, type Clock } from "../core/clock.ts";
import type { LeaseHandle } from "./permit.ts";

/** Reports a renewal or release that failed (a store outage); the lease still expires on its own. */
export type LeaseErrorHandler = (error: unknown) => void;

/** Keeps `lease` alive until {@link LeaseKeeper.end}. */
export class LeaseKeeper {
  #cancel: (() => void) | undefined;
  #ended = false;

  constructor(
    private readonly lease: LeaseHandle,
    private readonly clock: Clock,
    private readonly leaseMs: number,
    private readonly onError: LeaseErrorHandler,
  ) {
    this.#arm();
  }

  #arm(): void {
    // Unref'd: the task itself keeps the process alive while it runs; a renewal must not.
    this.#cancel = after(this.clock, Math.max(1, Math.floor(this.leaseMs / 3)), () => this.#renew(), true);
  }

  #renew(): void {
    if (this.#ended) return;
    try {
      const r = this.lease.renew();
      if (r instanceof Promise) r.catch(this.onError);
    } catch (error) {
      this.onError(error);
    }
    this.#arm();
  }

  /** Stops renewing and frees the slot (once). */
  end(): Promise<void> | undefined {
    if (this.#ended) return undefined;
    this.#ended = true;
    this.#cancel?.();
    try {
      const r = this.lease.release();
      if (r instanceof Promise) return r.then(() => undefined, this.onError);
    } catch (error) {
      this.onError(error);
    }
    return undefined;
  }
}

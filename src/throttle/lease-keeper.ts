/**
 * A running job's slot: renewed every `leaseMs / 3` while the task runs (so two renewals may
 * fail before another process could take it), released once when it settles. A process killed
 * mid-task renews nothing, and its slot frees itself `leaseMs` later.
 *
 * A lease can be lost while its job runs: a renewal finds it gone (it expired during a stall
 * longer than `leaseMs`, or the store lost it, and the slot went to another job), or no renewal
 * has reached the store for `leaseMs` (an outage: the store's copy has expired by now). Then the
 * keeper stops renewing and reports a {@link LeaseLostError} once: the throttle aborts the job's
 * signal with it and emits it as an `error` event (docs/throttle.md, "Leases").
 */
import type { Decision } from "../algorithms/decision.ts";
import { after, type Clock } from "../core/clock.ts";
import { LeaseLostError } from "../core/errors.ts";
import type { LeaseHandle } from "./permit.ts";

/** Reports a renewal or release that failed (a store outage); the lease still expires on its own. */
export type LeaseErrorHandler = (error: unknown) => void;

/** Whether a renewal's answer says the lease is no longer held (a fleet queue's `false`, a denied decision). */
function refused(answer: unknown): boolean {
  if (answer === false) return true;
  return typeof answer === "object" && answer !== null && (answer as Partial<Decision>).allowed === false;
}

/** Keeps `lease` alive until {@link LeaseKeeper.end}. */
export class LeaseKeeper {
  #cancel: (() => void) | undefined;
  #ended = false;
  #lost = false;
  /** When the store last confirmed the lease (taken or renewed). */
  #heldAt: number;

  constructor(
    private readonly lease: LeaseHandle,
    private readonly clock: Clock,
    private readonly leaseMs: number,
    private readonly onError: LeaseErrorHandler,
    private readonly onLost: (error: LeaseLostError) => void = () => {},
  ) {
    this.#heldAt = clock.now();
    this.#arm();
  }

  #arm(): void {
    // Unref'd: the task itself keeps the process alive while it runs; a renewal must not.
    this.#cancel = after(this.clock, Math.max(1, Math.floor(this.leaseMs / 3)), () => this.#renew(), true);
  }

  #renew(): void {
    if (this.#ended || this.#lost) return;
    const sent = this.clock.now();
    try {
      const r = this.lease.renew();
      if (r instanceof Promise) {
        r.then(
          (answer) => this.#answered(answer, sent),
          (error: unknown) => this.#failed(error),
        );
      } else this.#answered(r, sent);
    } catch (error) {
      this.#failed(error);
    }
    if (!this.#lost) this.#arm();
  }

  #answered(answer: unknown, sent: number): void {
    if (this.#ended || this.#lost) return;
    if (!refused(answer)) {
      if (sent > this.#heldAt) this.#heldAt = sent;
      return;
    }
    this.#lose(
      new LeaseLostError(
        "the job's lease is no longer held: a renewal found it gone (it expired or the store lost it), and its slot may run another job",
      ),
    );
  }

  #failed(error: unknown): void {
    this.onError(error);
    if (this.#ended || this.#lost) return;
    const since = this.clock.now() - this.#heldAt;
    if (since < this.leaseMs) return;
    this.#lose(
      new LeaseLostError(
        `no renewal of the job's lease reached the store for ${since} ms (leaseMs ${this.leaseMs}): the store's lease has expired, and its slot may run another job`,
        { cause: error },
      ),
    );
  }

  #lose(error: LeaseLostError): void {
    this.#lost = true;
    this.#cancel?.();
    this.#cancel = undefined;
    this.onLost(error);
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

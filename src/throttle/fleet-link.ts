/**
 * The runner's side of a fleet queue (src/core/fleet-queue.ts): jobs go to the store as tickets
 * (a key's new jobs of one event-loop turn in one call), grants come back from the store, and
 * nothing polls. Timers: the head owner's wake-up at the due instant, a heartbeat per key while
 * tickets of this process wait in it (so a dead process's tickets leave the queue), and a retry
 * after a failed call. A link that comes back after a loss (a Redis restart, a failover) sends
 * every waiting ticket again (the store ignores those it still holds).
 */
import { after, type Clock } from "../core/clock.ts";
import type { FleetGrant, FleetQueue, FleetQueueConfig, FleetQueueStore, FleetTicket } from "../core/fleet-queue.ts";

/** Backoff after a store call that failed outright. */
const RETRY_MS = 250;

/** What the link needs of the runner. */
export interface FleetHost {
  /** Tickets of `key` still waiting in this process. */
  waiting(key: string): FleetTicket[];
  /** The store granted `grant` of `key`. */
  granted(key: string, grant: FleetGrant): void;
  /** A store call failed (the jobs keep waiting). */
  failed(key: string, error: unknown): void;
}

/** One throttle's link to its fleet queue. */
export class FleetLink {
  readonly #clock: Clock;
  readonly #host: FleetHost;
  readonly #heartbeatMs: number;
  readonly #open: () => Promise<FleetQueue>;
  #opened: Promise<FleetQueue> | undefined;
  /** Tickets to send, by key, flushed once per turn. */
  readonly #outbox = new Map<string, FleetTicket[]>();
  /** Per key: the armed wake-up (pump at the due instant) and heartbeat. */
  readonly #wakes = new Map<string, () => void>();
  readonly #beats = new Map<string, () => void>();
  #flushing = false;
  #closed = false;

  constructor(
    store: FleetQueueStore,
    config: Omit<FleetQueueConfig, "listener">,
    clock: Clock,
    host: FleetHost,
    onOpenError: (error: unknown) => void,
  ) {
    this.#clock = clock;
    this.#host = host;
    this.#heartbeatMs = Math.max(1, Math.floor(config.ownerTtlMs / 3));
    // Opened on the first job: an idle throttle holds no connection (its subscription's).
    this.#open = () => {
      if (this.#opened === undefined) {
        this.#opened = store.openFleetQueue({
          ...config,
          listener: {
            granted: (key, grants) => {
              for (const g of grants) host.granted(key, g);
            },
            wake: (key, ms) => this.#wake(key, ms),
            relinked: () => this.#resendAll(),
          },
        });
        this.#opened.catch((error: unknown) => {
          // A failed open is tried again by the next call.
          this.#opened = undefined;
          onOpenError(error);
        });
      }
      return this.#opened;
    };
  }

  /** The queue, opened on first use. */
  get #queue(): Promise<FleetQueue> {
    return this.#open();
  }

  /** Sends `ticket` of `key` to the store (with the key's other new tickets of this turn). */
  submit(key: string, ticket: FleetTicket): void {
    let box = this.#outbox.get(key);
    if (box === undefined) this.#outbox.set(key, (box = []));
    box.push(ticket);
    this.#watch(key);
    if (!this.#flushing) {
      this.#flushing = true;
      queueMicrotask(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushing = false;
    const boxes = [...this.#outbox];
    this.#outbox.clear();
    for (const [key, tickets] of boxes) this.#send(key, tickets);
  }

  /** One enqueue call; on failure the tickets still waiting are sent again after a pause. */
  #send(key: string, tickets: FleetTicket[]): void {
    this.#queue
      .then((q) => q.enqueue(key, tickets))
      .catch((error: unknown) => {
        this.#host.failed(key, error);
        if (this.#closed) return;
        after(this.#clock, RETRY_MS, () => {
          const still = new Set(this.#host.waiting(key).map((t) => t.id));
          const again = tickets.filter((t) => still.has(t.id));
          if (again.length > 0) this.#send(key, again);
        });
      });
  }

  /** Every waiting ticket of every key, again (the store may have lost them). */
  #resendAll(): void {
    for (const key of this.#beats.keys()) {
      const tickets = this.#host.waiting(key);
      if (tickets.length > 0) this.#send(key, tickets);
    }
  }

  /** Keeps a heartbeat for `key` while tickets of this process wait in it. */
  #watch(key: string): void {
    if (this.#beats.has(key) || this.#closed) return;
    const beat = () => {
      if (this.#closed || this.#host.waiting(key).length === 0) {
        this.#beats.delete(key);
        return;
      }
      this.#beats.set(key, after(this.#clock, this.#heartbeatMs, beat));
      this.#queue
        .then((q) => q.heartbeat(key))
        .then(
          (known) => {
            if (known) return;
            // The store had forgotten this process: its tickets may be gone.
            const tickets = this.#host.waiting(key);
            if (tickets.length > 0) this.#send(key, tickets);
          },
          (error: unknown) => this.#host.failed(key, error),
        );
    };
    this.#beats.set(key, after(this.#clock, this.#heartbeatMs, beat));
  }

  /** This process owns `key`'s head: grant what fits `ms` from now. */
  #wake(key: string, ms: number): void {
    if (this.#closed) return;
    this.#wakes.get(key)?.();
    this.#wakes.set(
      key,
      after(this.#clock, ms, () => {
        this.#wakes.delete(key);
        if (this.#host.waiting(key).length === 0) return;
        this.#queue
          .then((q) => q.pump(key))
          .catch((error: unknown) => {
            this.#host.failed(key, error);
            this.#wake(key, RETRY_MS);
          });
      }),
    );
  }

  /** Takes a waiting ticket out of the store's queue ("returned": its grant, which crossed this, went back). */
  async cancel(key: string, id: string): Promise<void> {
    await (await this.#queue).cancel(key, id);
  }

  /** Frees a granted job's lease (and with `refund`, its rate units); grants what now fits. */
  async release(key: string, id: string, refund: boolean): Promise<void> {
    await (await this.#queue).release(key, id, refund);
  }

  /** Renews a running job's lease. */
  async renew(key: string, id: string): Promise<boolean> {
    return (await this.#queue).renew(key, id);
  }

  /** Stops every timer and ends the subscription. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const cancel of this.#wakes.values()) cancel();
    for (const cancel of this.#beats.values()) cancel();
    this.#wakes.clear();
    this.#beats.clear();
    if (this.#opened === undefined) return;
    try {
      await (await this.#opened).close();
    } catch {
      // It never opened: nothing to end.
    }
  }
}

/**
 * The runner's side of a fleet queue (src/core/fleet-queue.ts): jobs go to the store as tickets
 * (a key's new jobs of one event-loop turn in one call), grants come back from the store, and
 * nothing polls. Timers: the head owner's wake-up at the due instant (cancelled once the key has
 * no waiting ticket), one heartbeat timer for the whole process while tickets of it wait (so a
 * dead process's tickets leave the queue; where the store sees liveness itself, only a rare
 * rescue pump), and a retry after a failed call. A link that comes back after a loss (a Redis
 * restart, a failover) sends every waiting ticket again (the store ignores those it still
 * holds); so does an owner the store had forgotten (a stall past its time to live).
 */
import { after, type Clock } from "../core/clock.ts";
import type {
  FleetGrant,
  FleetQueue,
  FleetQueueConfig,
  FleetQueueStore,
  FleetTicket,
  Restamped,
} from "../core/fleet-queue.ts";

/** Backoff after a store call that failed outright. */
const RETRY_MS = 250;

/** `after`, unref'd when `unref` says so (the callback last, as the calls below read best). */
const afterUnref = (clock: Clock, ms: number, unref: boolean, fire: () => void) => after(clock, ms, fire, unref);

/** What the link needs of the runner. */
export interface FleetHost {
  /** Tickets of `key` still waiting in this process. */
  waiting(key: string): FleetTicket[];
  /** Whether no ticket of `key` waits in this process (cheap). */
  idle(key: string): boolean;
  /** The store granted `grant` of `key`. */
  granted(key: string, grant: FleetGrant): void;
  /** A store call failed (the jobs keep waiting). */
  failed(key: string, error: unknown): void;
  /** Another process paused `key` for the fleet for `ms`, until `until` on the store's clock. */
  paused(key: string, ms: number, until: number): void;
  /** The store says `key`'s cool-down job ended: a late start it held back may ask again. */
  coolFreed?(key: string): void;
}

/** One throttle's link to its fleet queue. */
export class FleetLink {
  readonly #clock: Clock;
  readonly #host: FleetHost;
  readonly #ownerTtlMs: number;

  readonly #open: () => Promise<FleetQueue>;
  #opened: Promise<FleetQueue> | undefined;
  /** The queue once open: its `ended` (the store's client quit for good) stops the retries. */
  #ready: FleetQueue | undefined;
  /** Tickets to send, by key, flushed once per turn. */
  readonly #outbox = new Map<string, FleetTicket[]>();
  /** Per key: the armed wake-up (pump at the due instant). */
  readonly #wakes = new Map<string, () => void>();
  /** Keys with tickets of this process waiting, and the last call on each (a call is a heartbeat). */
  readonly #live = new Map<string, number>();
  /** The one heartbeat timer (armed while #live is not empty). */
  #beat: (() => void) | undefined;
  #flushing = false;
  #closed = false;
  /** Tickets submitted and not yet handed to the store (in the outbox, or waiting for the queue to open). */
  readonly #unsent = new Set<string>();
  /** Unsent tickets cancelled meanwhile: they are never sent, and their cancel is no store call. */
  readonly #withdrawn = new Set<string>();

  constructor(
    store: FleetQueueStore,
    config: Omit<FleetQueueConfig, "listener">,
    clock: Clock,
    host: FleetHost,
    onOpenError: (error: unknown) => void,
  ) {
    this.#clock = clock;
    this.#host = host;
    this.#ownerTtlMs = config.ownerTtlMs;
    // Opened on the first job: an idle throttle holds no connection (its subscription's).
    this.#open = () => {
      if (this.#opened === undefined) {
        this.#opened = store.openFleetQueue({
          ...config,
          listener: {
            granted: (key, grants) => {
              for (const g of grants) host.granted(key, g);
              if (host.idle(key)) this.idle(key);
            },
            wake: (key, ms) => this.#wake(key, ms),
            unwake: (key) => {
              this.#wakes.get(key)?.();
              this.#wakes.delete(key);
            },
            relinked: () => this.#resendAll(),
            paused: (key, ms, until) => host.paused(key, ms, until),
            coolFreed: (key) => host.coolFreed?.(key),
          },
        });
        this.#opened.then(
          (q) => {
            this.#ready = q;
          },
          () => {},
        );
        this.#opened.catch((error: unknown) => {
          // A failed open is tried again by the next call.
          this.#opened = undefined;
          onOpenError(error);
        });
      }
      return this.#opened;
    };
  }

  /**
   * The heartbeat's period (read each time: a queue's liveness can change, Redis's once its
   * subscription is live). Liveness seen by the store: the heartbeat only rescues a key whose
   * head owner died after it was told to wake (rare), so it runs seldom and costs nothing per job.
   */
  get #heartbeatMs(): number {
    return this.#ready?.heartbeatless === true
      ? Math.max(1, 3 * this.#ownerTtlMs)
      : Math.max(1, Math.floor(this.#ownerTtlMs / 3));
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
    this.#unsent.add(ticket.id);
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
  #send(key: string, tickets: FleetTicket[], resent = false): void {
    this.#live.set(key, this.#clock.now());
    this.#queue
      .then((q) => {
        // A ticket cancelled before it left (its job expired or was aborted while the queue was
        // opening) is not sent: its job has settled, and a call made now could come after the
        // caller quit its client (a script's `quit()` then rejects).
        for (const t of tickets) this.#unsent.delete(t.id);
        const go = tickets.filter((t) => !this.#withdrawn.delete(t.id));
        return go.length === 0 ? true : q.enqueue(key, go, resent);
      })
      .then((known) => {
        if (known !== false) return;
        // The store had forgotten this process: tickets of it that reached the head meanwhile
        // were dropped as dead. The others still waiting go again (those it holds keep their place).
        const sent = new Set(tickets.map((t) => t.id));
        const others = this.#host.waiting(key).filter((t) => !sent.has(t.id));
        if (others.length > 0) this.#send(key, others);
      })
      .catch((error: unknown) => {
        this.#forget(tickets);
        this.#host.failed(key, error);
        if (this.#closed || this.#ready?.ended === true) return;
        // Unref'd: tickets still waiting keep the process alive by the heartbeat (#watch).
        afterUnref(this.#clock, RETRY_MS, true, () => {
          this.#forget(tickets);
          const still = new Set(this.#host.waiting(key).map((t) => t.id));
          const again = tickets.filter((t) => still.has(t.id));
          if (again.length > 0) this.#send(key, again, resent);
        });
      });
  }

  /** Unsent tickets of a failed send that were cancelled meanwhile: nothing will send them now. */
  #forget(tickets: readonly FleetTicket[]): void {
    for (const t of tickets) if (this.#withdrawn.delete(t.id)) this.#unsent.delete(t.id);
  }

  /** Every waiting ticket of every key, again (the store may have lost them). */
  #resendAll(): void {
    for (const key of [...this.#live.keys()]) {
      const tickets = this.#host.waiting(key);
      // Marked as sent again: the store may also have lost running jobs' leases (it then holds
      // new grants of the key until they are back, queue.lua).
      if (tickets.length > 0) this.#send(key, tickets, true);
    }
  }

  /** Keeps the heartbeat going while tickets of this process wait in `key`. */
  #watch(key: string): void {
    if (this.#closed) return;
    if (!this.#live.has(key)) this.#live.set(key, this.#clock.now());
    if (this.#beat === undefined) this.#beat = after(this.#clock, this.#heartbeatMs, () => this.#tick());
  }

  /**
   * One timer for every key: a key called on within the last half period needs no heartbeat
   * (any call says this process is alive), so a key's beats stay under 1.5 periods apart.
   */
  #tick(): void {
    this.#beat = undefined;
    if (this.#closed) return;
    const now = this.#clock.now();
    for (const [key, last] of this.#live) {
      if (this.#host.idle(key)) {
        this.#live.delete(key);
        continue;
      }
      if (now - last < this.#heartbeatMs / 2) continue;
      this.#live.set(key, now);
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
    }
    if (this.#live.size > 0) this.#beat = after(this.#clock, this.#heartbeatMs, () => this.#tick());
  }

  /** No ticket of `key` waits here any more: its wake-up and heartbeat end (an idle throttle holds no timer). */
  idle(key: string): void {
    this.#wakes.get(key)?.();
    this.#wakes.delete(key);
    this.#live.delete(key);
    if (this.#live.size === 0 && this.#beat !== undefined) {
      this.#beat();
      this.#beat = undefined;
    }
  }

  /**
   * This process owns `key`'s head: grant what fits `ms` from now. A wake-up made for others'
   * sake (no ticket of this process waits in `key`) is unref'd: a process whose jobs are done
   * exits (a script that quit its client without `close()` hung on its retries), and the head
   * is then pumped by a waiting process's rescue call.
   */
  #wake(key: string, ms: number): void {
    if (this.#closed || this.#ready?.ended === true) return;
    this.#wakes.get(key)?.();
    this.#wakes.set(
      key,
      afterUnref(this.#clock, ms, this.#host.idle(key), () => {
        this.#wakes.delete(key);
        // Pumped even with no ticket of this process waiting: the store chose this process to
        // wake the key (a wake-up told with a grant is short, and one with nothing to do is
        // dropped by any call whose reply names another waker).
        if (this.#live.has(key)) this.#live.set(key, this.#clock.now());
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
    if (this.#unsent.has(id)) {
      // Not in the store yet: it never will be, and there is nothing to call.
      this.#withdrawn.add(id);
      return;
    }
    await (await this.#queue).cancel(key, id);
  }

  /** Frees a granted job's lease (and with `refund`, its rate units); grants what now fits. */
  async release(key: string, id: string, refund: boolean): Promise<void> {
    await (await this.#queue).release(key, id, refund);
  }

  /** Moves a late start's rate units to the store's decision instant (undefined: the queue cannot). */
  async restamp(key: string, id: string, cost: number, at: number | undefined): Promise<Restamped | undefined> {
    const q = await this.#queue;
    return q.restamp === undefined ? undefined : q.restamp(key, id, cost, at);
  }

  /** Renews a running job's lease. */
  async renew(key: string, id: string): Promise<boolean> {
    return (await this.#queue).renew(key, id);
  }

  /**
   * Pauses `key` for the whole fleet in the store, which tells every other process at once;
   * undefined when the store's queue cannot (then the caller blocks the key's record instead).
   */
  async pause(key: string, ms: number): Promise<{ until: number; already: boolean } | undefined> {
    const q = await this.#queue;
    return q.pause === undefined ? undefined : q.pause(key, ms);
  }

  /**
   * Stops every timer and ends the subscription. A key this process was told to wake is handed
   * to another process first: its wake-up dies with this link, and the key's head would wait for
   * a rescue pump (3 owner lifetimes) after its due instant.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const told = [...this.#wakes.keys()];
    for (const cancel of this.#wakes.values()) cancel();
    this.#beat?.();
    this.#beat = undefined;
    this.#wakes.clear();
    this.#live.clear();
    if (this.#opened === undefined) return;
    try {
      const q = await this.#opened;
      if (q.leave !== undefined) await Promise.allSettled(told.map((key) => q.leave?.(key)));
      await q.close();
    } catch {
      // It never opened: nothing to end.
    }
  }
}

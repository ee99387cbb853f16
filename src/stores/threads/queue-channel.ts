/**
 * SharedMemoryStore's fleet queue (SPEC §16): one thread hosts every throttle's queue
 * (../fleet-queue-host.ts, deciding on its own binding of the shared rules, so on the same shared
 * records every thread checks), and the threads reach it over a BroadcastChannel named in the
 * store's handle: no transfer list, nothing to wire beyond passing `store.handle`. A call carries
 * its thread's id in its sequence number; replies and pushes reach every thread's listener,
 * which keeps its own (by sequence number and owner id).
 *
 * The host moves when its thread ends. Hosting is a lease in the store itself (a `concurrency`
 * rule of limit 1, leaseMs HOST_LEASE_MS, on the shared records: atomic across threads): the
 * creating thread takes it at the first call it answers (a store no throttle uses binds
 * nothing) and renews it every HOST_BEAT_MS; a thread with a fleet queue open
 * checks as often whether the lease is free, and the first to take it hosts and says so on the
 * channel. Owners hearing a new host open their queue again there with the grants they hold
 * (../fleet-queue-client.ts, `rejoins`) and send their waiting tickets again. The leases and
 * rate units are in shared memory, so the new host finds them all (`sharedRecords`): never more
 * than `concurrency` running, no window over the rate, and a job granted by the dead host whose
 * grant was never heard is granted once, by the new one. Waiting jobs wait through the move
 * (at most HOST_LEASE_MS + HOST_BEAT_MS, plus a call's timeout if one was under way).
 * Channels and timers are unref'd: neither hosting nor an idle throttle keeps a thread alive.
 */
import { BroadcastChannel, threadId } from "node:worker_threads";
import { systemClock } from "../../core/clock.ts";
import { StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import { compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import type { BoundRule } from "../../core/store.ts";
import { openHostedFleetQueue, type QueueTransport } from "../fleet-queue-client.ts";
import { type HostStore, isQueueMessage, QUEUE_CHANNEL, type QueueCall, QueueHost } from "../fleet-queue-host.ts";

/** Sequence numbers: the calling thread's id above this, its own count below. */
const THREAD = 2 ** 32;
/** How long a host's hold lasts without renewal (a dead host thread's queues move within it). */
export const HOST_LEASE_MS = 2000;
/** How often the host renews its hold, and a thread with an open queue looks for a free one. */
const HOST_BEAT_MS = 500;
/** A new host's announcement: owners open their queues again there. */
const HOST_MESSAGE = "queue-host";

/** A fresh channel name for a new store's queues. */
export function queueChannelName(): string {
  return `sluice:threads:${globalThis.crypto.randomUUID()}`;
}

const unref = (x: unknown) => (x as { unref?: () => void }).unref?.();

/** A thread's hosting: the host, its channel, the hold's receipt and the renewal timer. */
interface Hosting {
  readonly host: QueueHost;
  readonly channel: BroadcastChannel;
  receipt: number | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** This thread's part in one store's queues: its hold on hosting, and the queues open here. */
class Seat {
  readonly #name: string;
  readonly #store: HostStore;
  /** The hold on hosting, bound on first use (a store no throttle uses holds no rule for it). */
  #lockRule: BoundRule | undefined;
  /**
   * While hosting: the host, its channel, the hold's receipt (undefined: not taken yet, the
   * creating thread until the first call) and the renewal timer.
   */
  #hosting: Hosting | undefined;
  /** Queues open in this thread (the watch runs while there is one). */
  #open = 0;
  #watch: NodeJS.Timeout | undefined;

  constructor(name: string, store: HostStore) {
    this.#name = name;
    this.#store = store;
  }

  get #lock(): BoundRule {
    this.#lockRule ??= this.#store.bind({
      id: `sluice:fleet-host:${this.#name}`,
      rule: compileRule([validateSpec({ algorithm: "concurrency", limit: 1, leaseMs: HOST_LEASE_MS })]),
    });
    return this.#lockRule;
  }

  /** Takes the hold if it is free; its receipt, or undefined. */
  #take(): number | undefined {
    const now = systemClock.now();
    return (this.#lock.check("host", 1, now, "check") as { allowed: boolean }).allowed ? now : undefined;
  }

  /**
   * Hosts: at once with `hold` (the creating thread, which takes the hold at its first call: a
   * store no throttle uses binds nothing for it), else only if the hold is free. True while
   * this thread hosts.
   */
  tryHost(hold = false): boolean {
    if (this.#hosting !== undefined) return true;
    const receipt = hold ? undefined : this.#take();
    if (!hold && receipt === undefined) return false;
    const channel = new BroadcastChannel(this.#name);
    unref(channel);
    const host = new QueueHost(this.#store, (_thread, message) => channel.postMessage(message), systemClock, {
      sharedRecords: true,
    });
    const hosting: Hosting = { host, channel, receipt, timer: undefined };
    channel.onmessage = (event) => {
      const call = (event as unknown as { data: unknown }).data;
      if (!isQueueMessage<QueueCall>(call, "queue")) return;
      if (hosting.receipt === undefined) {
        // Answer only while holding: another thread that took the hold meanwhile hosts.
        hosting.receipt = this.#take();
        if (hosting.receipt === undefined) return this.#stepDown();
        this.#beat(hosting);
      }
      channel.postMessage(host.handle(Math.floor(call.seq / THREAD), call));
    };
    this.#hosting = hosting;
    if (receipt !== undefined) {
      this.#beat(hosting);
      // Owners of queues opened at an earlier host (in any thread, this one too) come here.
      channel.postMessage({ channel: QUEUE_CHANNEL, type: HOST_MESSAGE, thread: threadId });
    }
    return true;
  }

  #beat(h: Hosting): void {
    h.timer = setInterval(() => this.#renew(), HOST_BEAT_MS);
    unref(h.timer);
  }

  /** Keeps the hold; a hold lost (this thread stalled past HOST_LEASE_MS) ends hosting here. */
  #renew(): void {
    const h = this.#hosting;
    if (h?.receipt === undefined) return;
    const now = systemClock.now();
    if ((this.#lock.check("host", 1, now, "renew", h.receipt) as { allowed: boolean }).allowed) h.receipt = now;
    else this.#stepDown();
  }

  #stepDown(): void {
    const h = this.#hosting;
    if (h === undefined) return;
    this.#hosting = undefined;
    clearInterval(h.timer);
    h.host.stop();
    h.channel.close();
  }

  /** A queue opened in this thread: while any is, this thread looks for a free hold. */
  opened(): () => void {
    if (this.#open++ === 0) {
      this.#watch = setInterval(() => this.tryHost(), HOST_BEAT_MS);
      unref(this.#watch);
    }
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      if (--this.#open === 0) clearInterval(this.#watch);
    };
  }

  /** Ends hosting here and gives the hold back (another thread hosts at its next look). */
  close(): void {
    const h = this.#hosting;
    this.#stepDown();
    // The store decides synchronously (a SharedMemoryStore binding): nothing to await.
    if (h?.receipt !== undefined) void this.#lock.check("host", 1, systemClock.now(), "release", h.receipt);
  }
}

/** Per store (channel name), this thread's seat. */
const seats = new Map<string, Seat>();

function seatOf(name: string, store: HostStore): Seat {
  let seat = seats.get(name);
  if (seat === undefined) seats.set(name, (seat = new Seat(name, store)));
  return seat;
}

/** Hosts the fleet queues of the store created in this thread (until its thread ends, or `close`). */
export function hostFleetQueues(name: string, store: HostStore): { close(): void } {
  const seat = seatOf(name, store);
  seat.tryHost(true);
  return { close: () => seat.close() };
}

let nextSeq = 1;

/** Opens a throttle's fleet queue at the hosting thread; calls fail after `timeoutMs`. */
export function openThreadsFleetQueue(
  name: string,
  config: FleetQueueConfig,
  timeoutMs: number,
  store: HostStore,
): Promise<FleetQueue> {
  const seat = seatOf(name, store);
  let sender: BroadcastChannel | undefined;
  const transport: QueueTransport = {
    peer: "the SharedMemoryStore's hosting thread",
    rejoins: true,
    sequence: () => threadId * THREAD + nextSeq++,
    send(call, failed) {
      try {
        // Its own instance: a BroadcastChannel never hears what it posted itself.
        sender ??= new BroadcastChannel(name);
        unref(sender);
        sender.postMessage(call);
      } catch (error) {
        queueMicrotask(() => failed(new StoreError(`posting a fleet queue call failed: ${String(error)}`)));
      }
    },
    listen(hear, lost) {
      // Unref'd: a throttle's queue stays open until close(), and a ref'd channel kept a worker
      // whose jobs were done alive for good (and so its parent). What must hold the thread is
      // held otherwise: a job waiting for a grant by the throttle's heartbeat timer (armed while
      // a ticket of this thread waits, ../../throttle/fleet-link.ts), a call awaiting its reply
      // by the call's timeout timer, a running job by its task.
      const channel = new BroadcastChannel(name);
      unref(channel);
      const closeWatch = seat.opened();
      channel.onmessage = (event) => {
        const data = (event as unknown as { data: unknown }).data;
        if (isQueueMessage<never>(data, HOST_MESSAGE as never)) lost();
        else hear(data);
      };
      return () => {
        closeWatch();
        channel.close();
      };
    },
  };
  return openHostedFleetQueue(transport, config, timeoutMs);
}

/**
 * An owner's end of a fleet queue kept by a host (fleet-queue-host.ts): each FleetQueue call is
 * one message answered by one reply; grants decided outside this owner's calls arrive pushed.
 * The transport (IPC to the node:cluster primary, a BroadcastChannel between threads) hears
 * messages only while the queue is open or a call waits, so a closed queue's process or thread
 * is free to exit.
 */
import { StoreError } from "../core/errors.ts";
import type { FleetQueue, FleetQueueConfig, FleetTicket } from "../core/fleet-queue.ts";
import { isQueueMessage, QUEUE_CHANNEL, type QueueCall, type QueuePush, type QueueReply } from "./fleet-queue-host.ts";

/** How an owner reaches its host. */
export interface QueueTransport {
  /** Names the host in error messages. */
  readonly peer: string;
  /** A sequence number unique among the host's callers. */
  sequence(): number;
  /** Sends `call`; `failed` hears why it could not be sent. */
  send(call: QueueCall, failed: (error: StoreError) => void): void;
  /** Starts hearing replies and pushes (`lost`: the host is gone for good); returns what stops it. */
  listen(hear: (message: unknown) => void, lost: () => void): () => void;
}

/** Opens a fleet queue at the transport's host; calls fail after `timeoutMs`. */
export async function openHostedFleetQueue(
  transport: QueueTransport,
  config: FleetQueueConfig,
  timeoutMs: number,
): Promise<FleetQueue> {
  const queue = new HostedFleetQueue(transport, config, timeoutMs);
  await queue.start();
  return queue;
}

/** A throttle's queue kept by a host, as one owner sees it. */
export class HostedFleetQueue implements FleetQueue {
  #owner = "";
  readonly #transport: QueueTransport;
  readonly #config: FleetQueueConfig;
  readonly #timeoutMs: number;
  readonly #waiting = new Map<number, { settle: (r: QueueReply) => void; fail: (e: StoreError) => void }>();
  #open = false;
  /** Stops hearing, while listening. */
  #unlisten: (() => void) | undefined;

  constructor(transport: QueueTransport, config: FleetQueueConfig, timeoutMs: number) {
    this.#transport = transport;
    this.#config = config;
    this.#timeoutMs = timeoutMs;
  }

  /** This owner's id at the host. */
  get owner(): string {
    return this.#owner;
  }

  /** Registers this owner with the host. */
  async start(): Promise<void> {
    const { rate, concurrency, ownerTtlMs, lookaheadMs = 0 } = this.#config;
    this.#open = true;
    try {
      const reply = await this.#call("o", "", [], {
        rate: rate === undefined ? null : { id: rate.id, specs: rate.specs },
        concurrency: concurrency === undefined ? null : { id: concurrency.id, spec: concurrency.spec },
        ownerTtlMs,
        lookaheadMs,
      });
      this.#owner = reply.status;
    } catch (error) {
      this.#open = false;
      this.#listen();
      throw error;
    }
  }

  readonly #hear = (message: unknown): void => {
    if (isQueueMessage<QueueReply>(message, "queue-reply")) {
      const w = this.#waiting.get(message.seq);
      if (w === undefined) return; // another owner's, or answered after its timeout
      this.#waiting.delete(message.seq);
      this.#listen();
      if (message.error !== undefined) w.fail(new StoreError(`${this.#transport.peer}: ${message.error}`));
      else w.settle(message);
    } else if (isQueueMessage<QueuePush>(message, "queue-push") && message.owner === this.#owner) {
      if (message.grants.length > 0) this.#config.listener.granted(message.key, message.grants);
    }
  };

  readonly #lost = (): void => {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    this.#open = false;
    this.#listen();
    for (const w of all) w.fail(new StoreError(`${this.#transport.peer} is gone`));
  };

  /** Hears messages while the queue is open or a call waits. */
  #listen(): void {
    const want = this.#open || this.#waiting.size > 0;
    if (want === (this.#unlisten !== undefined)) return;
    if (want) this.#unlisten = this.#transport.listen(this.#hear, this.#lost);
    else {
      this.#unlisten?.();
      this.#unlisten = undefined;
    }
  }

  /** One call; the caller's grants in the reply go to the listener. */
  #call(op: QueueCall["op"], key: string, args: (string | number)[], rules?: QueueCall["rules"]): Promise<QueueReply> {
    const seq = this.#transport.sequence();
    const call: QueueCall = { channel: QUEUE_CHANNEL, type: "queue", seq, owner: this.#owner, op, key, args };
    return new Promise<QueueReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.#waiting.delete(seq)) return;
        this.#listen();
        reject(
          new StoreError(`${this.#transport.peer} did not answer a fleet queue call within ${this.#timeoutMs} ms`),
        );
      }, this.#timeoutMs);
      this.#waiting.set(seq, {
        settle: (r) => {
          clearTimeout(timer);
          if (r.grants.length > 0) this.#config.listener.granted(r.key, r.grants);
          resolve(r);
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#listen();
      this.#transport.send(rules === undefined ? call : { ...call, rules }, (error) => {
        const w = this.#waiting.get(seq);
        if (w === undefined) return;
        this.#waiting.delete(seq);
        this.#listen();
        w.fail(error);
      });
    });
  }

  async enqueue(key: string, tickets: readonly FleetTicket[]): Promise<void> {
    const args: (string | number)[] = [];
    for (const t of tickets) args.push(t.id, t.priority, t.cost, t.front === true ? 1 : 0);
    await this.#call("e", key, args);
  }

  async cancel(key: string, id: string): Promise<"removed" | "returned" | "unknown"> {
    const { status } = await this.#call("c", key, [id]);
    return status === "1" ? "removed" : status === "2" ? "returned" : "unknown";
  }

  async release(key: string, id: string, refund: boolean): Promise<void> {
    await this.#call("r", key, [id, refund ? 1 : 0]);
  }

  async renew(key: string, id: string): Promise<boolean> {
    return (await this.#call("n", key, [id])).status === "1";
  }

  async heartbeat(key: string): Promise<boolean> {
    return (await this.#call("h", key, [])).status === "1";
  }

  /** The host grants at the due instant itself; a pump is a heartbeat (it grants what fits). */
  async pump(key: string): Promise<void> {
    await this.#call("h", key, []);
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    try {
      await this.#call("x", "", []);
    } finally {
      this.#listen();
    }
  }
}

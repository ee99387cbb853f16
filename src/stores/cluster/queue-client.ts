/**
 * A worker's end of the primary's fleet queue (queue-host.ts): each FleetQueue call is one IPC
 * message answered by one reply; grants decided outside this worker's calls arrive pushed. The
 * "message" listener stays attached while the queue is open (a closed queue's worker is free to
 * exit once its last call is answered).
 */
import { StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig, FleetTicket } from "../../core/fleet-queue.ts";
import { CHANNEL, isQueueMessage, type QueueCall, type QueuePush, type QueueReply } from "./queue-protocol.ts";

/** Opens a fleet queue in the node:cluster primary; calls fail after `timeoutMs`. */
export async function openClusterFleetQueue(config: FleetQueueConfig, timeoutMs: number): Promise<FleetQueue> {
  const queue = new ClusterFleetQueue(config, timeoutMs);
  await queue.start();
  return queue;
}

let nextSeq = 1;

/** A throttle's queue in the primary, as one worker (its owner) sees it. */
export class ClusterFleetQueue implements FleetQueue {
  #owner = "";
  readonly #config: FleetQueueConfig;
  readonly #timeoutMs: number;
  readonly #waiting = new Map<number, { settle: (r: QueueReply) => void; fail: (e: StoreError) => void }>();
  #open = false;
  #listening = false;

  constructor(config: FleetQueueConfig, timeoutMs: number) {
    this.#config = config;
    this.#timeoutMs = timeoutMs;
  }

  /** This worker's owner id in the primary's queue. */
  get owner(): string {
    return this.#owner;
  }

  /** Registers this owner with the primary. */
  async start(): Promise<void> {
    const { rate, concurrency, ownerTtlMs } = this.#config;
    this.#open = true;
    try {
      const reply = await this.#call("o", "", [], {
        rate: rate === undefined ? null : { id: rate.id, specs: rate.specs },
        concurrency: concurrency === undefined ? null : { id: concurrency.id, spec: concurrency.spec },
        ownerTtlMs,
      });
      this.#owner = reply.status;
    } catch (error) {
      this.#open = false;
      this.#listen();
      throw error;
    }
  }

  readonly #onMessage = (message: unknown): void => {
    if (isQueueMessage<QueueReply>(message, "queue-reply")) {
      const w = this.#waiting.get(message.seq);
      if (w === undefined) return; // another queue's, or answered after its timeout
      this.#waiting.delete(message.seq);
      this.#listen();
      if (message.error !== undefined) w.fail(new StoreError(`the cluster primary: ${message.error}`));
      else w.settle(message);
    } else if (isQueueMessage<QueuePush>(message, "queue-push") && message.owner === this.#owner) {
      if (message.grants.length > 0) this.#config.listener.granted(message.key, message.grants);
    }
  };

  readonly #onDisconnect = (): void => {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    this.#open = false;
    this.#listen();
    for (const w of all) w.fail(new StoreError("the node:cluster primary disconnected"));
  };

  /** Attaches the listener while the queue is open or a call waits (Node keeps a process with one alive). */
  #listen(): void {
    const want = this.#open || this.#waiting.size > 0;
    if (want === this.#listening) return;
    this.#listening = want;
    if (want) {
      process.on("message", this.#onMessage);
      process.on("disconnect", this.#onDisconnect);
    } else {
      process.off("message", this.#onMessage);
      process.off("disconnect", this.#onDisconnect);
    }
  }

  /** One call; the caller's grants in the reply go to the listener. */
  #call(op: QueueCall["op"], key: string, args: (string | number)[], rules?: QueueCall["rules"]): Promise<QueueReply> {
    const send = process.send;
    if (send === undefined || !process.connected) {
      return Promise.reject(new StoreError("no IPC channel to the node:cluster primary (disconnected)"));
    }
    const seq = nextSeq++;
    const message: QueueCall = { channel: CHANNEL, type: "queue", seq, owner: this.#owner, op, key, args };
    return new Promise<QueueReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.#waiting.delete(seq)) return;
        this.#listen();
        reject(new StoreError(`the cluster primary did not answer a fleet queue call within ${this.#timeoutMs} ms`));
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
      process.send?.(
        rules === undefined ? message : { ...message, rules },
        undefined,
        undefined,
        (error: Error | null) => {
          if (error === null || !this.#waiting.has(seq)) return;
          const w = this.#waiting.get(seq);
          this.#waiting.delete(seq);
          this.#listen();
          w?.fail(new StoreError(`sending to the node:cluster primary failed: ${error.message}`, { cause: error }));
        },
      );
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

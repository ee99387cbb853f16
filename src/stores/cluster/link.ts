/**
 * The worker's end of the IPC channel, shared by every ClusterStore in the process: sends
 * batches, routes replies to the batch waiting for them by sequence number, and fails every
 * waiting batch at once when the channel to the primary closes.
 *
 * The "message" listener is attached only while a reply is awaited: Node keeps a process alive
 * while its IPC channel has listeners, and a worker with nothing in flight must be free to exit.
 */
import cluster from "node:cluster";
import { StoreError } from "../../core/errors.ts";
import {
  type BatchMessage,
  type BindRecord,
  isMessage,
  type LeaseRecord,
  type OpResult,
  type ReplyMessage,
} from "./protocol.ts";

/** How a ClusterStore reaches the deciding side: IPC to the primary (here) or a socket host (socket-link.ts). */
export interface Transport {
  /** Names the deciding side in error messages. */
  readonly peer: string;
  /** A sequence number for the next batch (unique on this transport, never 0). */
  sequence(): number;
  /** Stops waiting for `seq` (its timeout fired); a late reply is then ignored. */
  forget(seq: number): void;
  /** Sends `message`; `w` (if given) hears its reply or why none will come. */
  post(message: BatchMessage, w?: Waiting): void;
  /** Registers a store whose live rules are registered again whenever a new host is reached. */
  attach(store: Resyncable): void;
}

/** A store that can list its live rule registrations (for a host that never saw them). */
export interface Resyncable {
  /** The registrations of every rule still bound and already sent. */
  records(): BindRecord[];
  /** The leases it holds (a new host never saw them). */
  leases(): LeaseRecord[];
}

/** A batch waiting for its reply. */
export interface Waiting {
  /** The primary answered, results in operation order. */
  settle(results: readonly OpResult[]): void;
  /** The reply will never come (channel closed or send failed). */
  fail(error: StoreError): void;
}

const waiting = new Map<number, Waiting>();
let nextSeq = 1;
let attached = false;

const onMessage = (message: unknown) => {
  if (!isMessage<ReplyMessage>(message, "reply")) return;
  const w = waiting.get(message.seq);
  if (w === undefined) return; // answered after its timeout: the policy already decided
  forget(message.seq);
  w.settle(message.results);
};

const onDisconnect = () => {
  const all = [...waiting.values()];
  waiting.clear();
  detach();
  const error = new StoreError("the node:cluster primary disconnected");
  for (const w of all) w.fail(error);
};

function detach(): void {
  if (!attached) return;
  attached = false;
  process.off("message", onMessage);
  process.off("disconnect", onDisconnect);
}

/** True in a `node:cluster` worker (which has an IPC channel to the primary). */
export function hasChannel(): boolean {
  return cluster.isWorker && typeof process.send === "function";
}

/** A sequence number for the next batch (unique in this process, never 0). */
export function sequence(): number {
  return nextSeq++;
}

/** Stops waiting for `seq` (its timeout fired); a late reply is then ignored. */
export function forget(seq: number): void {
  if (waiting.delete(seq) && waiting.size === 0) detach();
}

/** Sends `message`; `w` (if given) hears its reply or why none will come. */
export function post(message: BatchMessage, w?: Waiting): void {
  const send = process.send;
  if (w !== undefined) {
    if (send === undefined || !process.connected) {
      queueMicrotask(() => w.fail(new StoreError("no IPC channel to the node:cluster primary (disconnected)")));
      return;
    }
    waiting.set(message.seq, w);
    if (!attached) {
      attached = true;
      process.on("message", onMessage);
      process.on("disconnect", onDisconnect);
    }
  }
  if (send === undefined || !process.connected) return;
  process.send?.(message, undefined, undefined, (error: Error | null) => {
    if (error === null || w === undefined || !waiting.has(message.seq)) return;
    forget(message.seq);
    w.fail(new StoreError(`sending to the node:cluster primary failed: ${error.message}`, { cause: error }));
  });
}

/** The IPC transport to the node:cluster primary (one per process; the primary never changes). */
export const ipc: Transport = { peer: "the cluster primary", sequence, forget, post, attach() {} };

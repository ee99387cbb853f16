/**
 * SharedMemoryStore's fleet queue (SPEC §16): the thread that created the store keeps every
 * throttle's queue (../fleet-queue-host.ts, deciding on its own binding of the shared rules, so
 * on the same shared records every thread checks), and the threads reach it over a
 * BroadcastChannel named in the store's handle: no transfer list, nothing to wire beyond
 * passing `store.handle`. A call carries its thread's id in its sequence number; replies and
 * pushes reach every thread's listener, which keeps its own (by sequence number and owner id).
 * The host's channel is unref'd: it never keeps the creating thread alive.
 */
import { BroadcastChannel, threadId } from "node:worker_threads";
import { StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import { openHostedFleetQueue, type QueueTransport } from "../fleet-queue-client.ts";
import { type HostStore, isQueueMessage, type QueueCall, QueueHost } from "../fleet-queue-host.ts";

/** Sequence numbers: the calling thread's id above this, its own count below. */
const THREAD = 2 ** 32;

/** A fresh channel name for a new store's queues. */
export function queueChannelName(): string {
  return `sluice:threads:${globalThis.crypto.randomUUID()}`;
}

/** Keeps the fleet queues of the store created in this thread; `close` ends them. */
export function hostFleetQueues(name: string, store: HostStore): { close(): void } {
  const channel = new BroadcastChannel(name);
  (channel as unknown as { unref(): void }).unref();
  const host = new QueueHost(store, (_thread, message) => channel.postMessage(message));
  channel.onmessage = (event) => {
    const call = (event as unknown as { data: unknown }).data;
    if (!isQueueMessage<QueueCall>(call, "queue")) return;
    channel.postMessage(host.handle(Math.floor(call.seq / THREAD), call));
  };
  return {
    close() {
      host.stop();
      channel.close();
    },
  };
}

let nextSeq = 1;

/** Opens a throttle's fleet queue at the creating thread's host; calls fail after `timeoutMs`. */
export function openThreadsFleetQueue(name: string, config: FleetQueueConfig, timeoutMs: number): Promise<FleetQueue> {
  let sender: BroadcastChannel | undefined;
  const transport: QueueTransport = {
    peer: "the SharedMemoryStore's creating thread",
    sequence: () => threadId * THREAD + nextSeq++,
    send(call, failed) {
      try {
        // Its own instance: a BroadcastChannel never hears what it posted itself.
        sender ??= new BroadcastChannel(name);
        (sender as unknown as { unref(): void }).unref();
        sender.postMessage(call);
      } catch (error) {
        queueMicrotask(() => failed(new StoreError(`posting a fleet queue call failed: ${String(error)}`)));
      }
    },
    listen(hear) {
      // Held (ref'd) while the queue is open or a call waits, like a socket with a request in flight.
      const channel = new BroadcastChannel(name);
      channel.onmessage = (event) => hear((event as unknown as { data: unknown }).data);
      return () => channel.close();
    },
  };
  return openHostedFleetQueue(transport, config, timeoutMs);
}

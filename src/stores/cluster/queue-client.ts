/**
 * A ClusterStore worker's transport to the fleet queue the node:cluster primary keeps
 * (../fleet-queue-host.ts, wired in primary.ts): calls and replies over the worker's IPC channel.
 */
import { StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import { openHostedFleetQueue, type QueueTransport } from "../fleet-queue-client.ts";

let nextSeq = 1;

/** The IPC transport to the primary's fleet queue. */
const ipcQueue: QueueTransport = {
  peer: "the cluster primary",
  sequence: () => nextSeq++,
  send(call, failed) {
    if (process.send === undefined || !process.connected) {
      queueMicrotask(() => failed(new StoreError("no IPC channel to the node:cluster primary (disconnected)")));
      return;
    }
    process.send(call, undefined, undefined, (error: Error | null) => {
      if (error !== null) failed(new StoreError(`sending to the node:cluster primary failed: ${error.message}`));
    });
  },
  listen(hear, lost) {
    // Node keeps a worker alive while its IPC channel has listeners: attached only while needed.
    process.on("message", hear);
    process.on("disconnect", lost);
    return () => {
      process.off("message", hear);
      process.off("disconnect", lost);
    };
  },
};

/** Opens a throttle's fleet queue in the node:cluster primary; calls fail after `timeoutMs`. */
export function openClusterFleetQueue(config: FleetQueueConfig, timeoutMs: number): Promise<FleetQueue> {
  return openHostedFleetQueue(ipcQueue, config, timeoutMs);
}

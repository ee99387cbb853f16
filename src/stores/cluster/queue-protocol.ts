/**
 * The fleet queue's messages between ClusterStore workers and the node:cluster primary
 * (queue-host.ts keeps the queue, queue-client.ts is a worker's end). A worker's call and the
 * primary's reply share a sequence number; a grant decided for a worker outside its own call
 * (another worker's release, the primary's own timer) is pushed to it unasked. Plain JSON, like
 * protocol.ts.
 */
import type { FleetGrant } from "../../core/fleet-queue.ts";
import type { AlgorithmSpec } from "../../core/spec.ts";
import { CHANNEL } from "./protocol.ts";

/** What a queue decides with: the rate limiter's rule and the concurrency rule (ids and specs). */
export interface QueueRules {
  readonly rate: { readonly id: string; readonly specs: readonly AlgorithmSpec[] } | null;
  readonly concurrency: { readonly id: string; readonly spec: AlgorithmSpec } | null;
  readonly ownerTtlMs: number;
}

/**
 * A worker's call: "o" open (`rules`; the reply's status is the owner's id), "e" enqueue
 * (args: id, priority, cost, front 0|1, repeated), "c" cancel (id), "r" release (id, refund
 * 0|1), "n" renew (id), "h" heartbeat, "x" close (the owner's waiting tickets leave).
 */
export interface QueueCall {
  readonly channel: typeof CHANNEL;
  readonly type: "queue";
  readonly seq: number;
  /** The owner's id (from "o"'s reply); "" for "o". */
  readonly owner: string;
  readonly op: "o" | "e" | "c" | "r" | "n" | "h" | "x";
  readonly key: string;
  readonly args: readonly (string | number)[];
  readonly rules?: QueueRules;
}

/** The primary's answer to a call: a status and the caller's grants it decided in that step. */
export interface QueueReply {
  readonly channel: typeof CHANNEL;
  readonly type: "queue-reply";
  readonly seq: number;
  readonly status: string;
  readonly key: string;
  readonly grants: readonly FleetGrant[];
  readonly error?: string;
}

/** Grants the primary decided for `owner` outside its calls. */
export interface QueuePush {
  readonly channel: typeof CHANNEL;
  readonly type: "queue-push";
  readonly owner: string;
  readonly key: string;
  readonly grants: readonly FleetGrant[];
}

/** True when `message` is a fleet-queue message of `type`. */
export function isQueueMessage<T extends QueueCall | QueueReply | QueuePush>(
  message: unknown,
  type: T["type"],
): message is T {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { channel?: unknown }).channel === CHANNEL &&
    (message as { type?: unknown }).type === type
  );
}

export { CHANNEL };

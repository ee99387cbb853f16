/**
 * The ioredis client the README recommends for Sentinel, given the sentinels' ports: it fails
 * fast while there is no master (no offline queue, no resend of commands in flight, retries
 * every 100 ms). Used by test/redis/sentinel.test.ts and test/throttle/fleet-queue-sentinel.test.ts.
 */
import { Redis } from "ioredis";
import { MASTER_NAME } from "./redis-topologies.ts";

/** A client of the sentinels on `ports` (lazyConnect: the caller connects it, and disconnects it). */
export function sentinelClient(ports: number[]): Redis {
  const client = new Redis({
    sentinels: ports.map((port) => ({ host: "127.0.0.1", port })),
    name: MASTER_NAME,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: null,
    retryStrategy: () => 100,
    lazyConnect: true,
  });
  client.on("error", () => {});
  return client;
}

// The head the Redis fleet children share (fleet-child.mjs, fleet-queue-child.mjs; the built
// package): an ioredis client that counts the commands this process sends (bench/throttle.mjs
// reports them per job), a RedisStore on it, one throttle named "fleet" with the given options
// on the system clock all processes share, and the seeded random source of its jobs.
import { Redis } from "ioredis";
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createThrottle, systemClock } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

/** The client, store, throttle and random source of one fleet process, and its commands sent so far. */
export function redisFleetHead(url, prefix, optionsJson, seed) {
  const client = new Redis(url);
  let commands = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    commands++;
    return send(command, stream);
  };
  const store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
  const throttle = createThrottle({ name: "fleet", store, clock: systemClock, ...JSON.parse(optionsJson) });
  return {
    client,
    store,
    throttle,
    random: mulberry32(Number(seed)),
    commands: () => commands,
    /** Closes the throttle, the store and the client. */
    async close() {
      await throttle.close();
      await store.close();
      client.disconnect();
    },
  };
}

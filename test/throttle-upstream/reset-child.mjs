// One process of the short-pause storm test (pause-end-storm-fleet.test.ts), the outside
// attack's child as it was (F1): it starts its jobs as soon as it runs (the processes of a fleet
// start apart), on a RedisStore over its own ioredis client. Args: redisUrl prefix upstreamUrl jobs.
// Prints `D <json>` with what each caller finally got, its pid and when it heard each pause.
import { Redis } from "ioredis";
import { createThrottle } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [redisUrl, prefix, upstream, jobs] = process.argv.slice(2);
const client = new Redis(redisUrl);
const store = new RedisStore({ client, prefix });
const throttle = createThrottle({
  name: "up",
  store,
  rate: { algorithm: "gcra", limit: 5, periodMs: 1000 },
  concurrency: 4,
  leaseMs: 3000,
  retries: 10,
  // The instant each request is sent rides on its job's header.
  fetch: (input, init) =>
    fetch(input, { ...init, headers: { ...init?.headers, "x-job": `${init?.headers?.["x-job"]}@${Date.now()}` } }),
});
throttle.on("error", () => {});
// When this process heard each pause (its own 429's, or the store's word).
const heard = [];
throttle.on("pause", () => heard.push(Date.now()));
const statuses = await Promise.all(
  Array.from({ length: Number(jobs) }, (_, i) =>
    throttle.fetch(upstream, { headers: { "x-job": `${process.pid}-${i}` } }, { key: "up" }).then(
      async (r) => {
        await r.text();
        return r.status;
      },
      (e) => String(e),
    ),
  ),
);
await throttle.close();
await client.quit();
console.log(`D ${JSON.stringify({ statuses, pid: process.pid, heard })}`);

// A fleet member on Redis (the built package) that ends up told to wake the key's head for
// another process, then quits its client without `throttle.close()` (issue 32, the outside
// attack's finding 2). Args: url prefix mode. It schedules a1 and a2 on one key; a1 passes, a2
// waits for the rate, and the test then queues its own job behind a2 ("waiting" line). a2's
// grant comes in this process's wake-up pump, whose reply names this process the waker of the
// other process's head. Mode "exit": the script ends after its quit (it must exit by itself);
// "stay": it stays 8 s more and reports the errors its throttle emitted after the quit (a
// retry on a client that has ended is one each).
import Redis from "ioredis";
import { createThrottle } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [url, prefix, mode] = process.argv.slice(2);
const client = new Redis(url);
// As the test's own throttle (redis-waker.test.ts): one a period of 5 s, and the fleet's rules alike.
const throttle = createThrottle({
  name: "exit32-waker",
  store: new RedisStore({ client, prefix }),
  rate: { algorithm: "gcra", limit: 1, periodMs: 5000, burst: 1 },
  concurrency: 4,
  leaseMs: 6000,
});
let quit = false;
let errorsAfterQuit = 0;
throttle.on("error", () => {
  if (quit) errorsAfterQuit++;
});
const a1 = throttle.schedule(() => "a1", { key: "api" });
const a2 = throttle.schedule(() => "a2", { key: "api" });
await a1;
// a2's ticket is in Redis once its enqueue call answered: wait for a turn or two past a1.
await new Promise((resolve) => setTimeout(resolve, 200));
console.log(JSON.stringify({ waiting: throttle.stats().queued }));
await a2;
await client.quit();
quit = true;
console.log(JSON.stringify({ quit: true }));
if (mode === "stay") {
  await new Promise((resolve) => setTimeout(resolve, 8000));
  console.log(JSON.stringify({ errorsAfterQuit }));
}

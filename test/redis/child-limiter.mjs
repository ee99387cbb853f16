// A separate process sharing one Redis limit (used by concurrency.test.ts). Imports the built
// package. Args: redisUrl prefix specJSON checks inFlight. Waits for a line on stdin so all
// processes start together, then prints {"allowed":N,"denied":N,"failed":N}.
import { Redis } from "ioredis";
import { createLimiter } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [url, prefix, specJson, checks, inFlight] = process.argv.slice(2);
const client = new Redis(url);
// The test counts failures (it expects none): a deadline far above any healthy round trip, so
// four processes on a loaded 2-core machine never turn a slow answer into an onError one.
const store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
// The same name in every process: that is what makes them share the limit.
const limiter = createLimiter(JSON.parse(specJson), { store, name: "shared" });

process.stdout.write("ready\n");
process.stdin.once("data", async () => {
  const counts = { allowed: 0, denied: 0, failed: 0 };
  let next = 0;
  const worker = async () => {
    while (next < Number(checks)) {
      next++;
      const d = await limiter.tryAcquire("shared-key");
      if (d.failure) counts.failed++;
      else if (d.allowed) counts.allowed++;
      else counts.denied++;
    }
  };
  await Promise.all(Array.from({ length: Number(inFlight) }, worker));
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  await store.close();
  client.disconnect();
});

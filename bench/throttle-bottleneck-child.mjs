// One process of a bottleneck fleet clustered on Redis (bench/throttle.mjs): the same jobs as
// test/throttle/fleet-child.mjs (seeded priorities and durations), through bottleneck's
// `datastore: "ioredis"` clustering. Args: redisUrl id optionsJSON jobs seed. Waits for a line on
// stdin; prints `S <job> <ms>` per start and `D <json>` at the end.
import Bottleneck from "bottleneck";
import { mulberry32 } from "../dist/core/seeded-random.js";

const [url, id, optionsJson, jobs, seed] = process.argv.slice(2);
const { hostname, port } = new URL(url);
const limiter = new Bottleneck({
  id,
  datastore: "ioredis",
  clearDatastore: false,
  clientOptions: { host: hostname, port: Number(port) },
  ...JSON.parse(optionsJson),
});
const random = mulberry32(Number(seed));
const out = [];
let failed = 0;
limiter.on("error", () => failed++);
await limiter.ready();
process.stdout.write("ready\n");
process.stdin.once("data", async () => {
  const runs = Array.from({ length: Number(jobs) }, (_, i) => {
    const priority = Math.floor(random() * 10);
    const ms = Math.floor(random() * 20);
    return limiter.schedule({ priority }, async () => {
      out.push(`S ${i} ${Date.now()}`);
      await new Promise((resolve) => setTimeout(resolve, ms));
    });
  });
  const results = await Promise.allSettled(runs);
  failed += results.filter((r) => r.status === "rejected").length;
  await limiter.disconnect();
  process.stdout.write(`${out.join("\n")}\nD ${JSON.stringify({ failed })}\n`);
});

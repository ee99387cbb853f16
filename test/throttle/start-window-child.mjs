// One process of test/throttle/start-window.test.ts (the built package), on Redis. Args: redisUrl
// prefix optionsJSON keys seed stallMs. On "go" (a line on stdin) it schedules, on each of `keys`
// keys, 2 jobs of each priority 0-9 (1-30 ms each, seeded). The test starts the stalling process
// first and the steady one a little later, so (a limit of 4 a window) each window's grants are 2 of
// the steady one's, which owns the head and so decides them by its own call, and 2 of the stalling
// one's two priorities further on, which the store PUBLISHes to it. With stallMs > 0 the process blocks its event
// loop for stallMs (synchronous work, as a GC pause or a large JSON.parse would) after a seeded
// pause of 20 ms to half a stall, again and again while its jobs wait: the grants published to it
// meanwhile are heard that much later than the store decided them. Prints `S <key> <job> <ms>` as
// each task begins (the system clock all processes and Redis share), then `D <json>`.
import { redisFleetHead } from "./redis-fleet-head.mjs";

const [url, prefix, optionsJson, keys, seed, stallMs] = process.argv.slice(2);
const { throttle, random, close } = redisFleetHead(url, prefix, optionsJson, seed);
const log = (line) => process.stdout.write(`${line}\n`);

// With START_WINDOW_TRACE: each start's unit instant (the store's) as the start event tells it.
if (process.env.START_WINDOW_TRACE) throttle.on("start", (e) => log(`A ${e.key} ${e.at} ${Date.now()}`));
await throttle.schedule(async () => {}, { key: "warm-up" });
log("ready");
process.stdin.once("data", async () => {
  const stall = Number(stallMs);
  const runs = [];
  for (let k = 0; k < Number(keys); k++) {
    for (let i = 0; i < 20; i++) {
      const key = `k${k}`;
      const ms = 1 + Math.floor(random() * 30);
      const job = async () => {
        log(`S ${key} ${i} ${Date.now()}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
      };
      runs.push(throttle.schedule(job, { key, priority: Math.floor(i / 2) }));
    }
  }
  let done = false;
  if (stall > 0) {
    const block = () => {
      if (done) return;
      const until = Date.now() + stall;
      while (Date.now() < until) {}
      setTimeout(block, 20 + Math.floor((random() * stall) / 2));
    };
    setTimeout(block, 20 + Math.floor((random() * stall) / 2));
  }
  const results = await Promise.allSettled(runs);
  done = true;
  const failed = results.filter((r) => r.status === "rejected").map((r) => String(r.reason));
  await close();
  log(`D ${JSON.stringify({ failed })}`);
});

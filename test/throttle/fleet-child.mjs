// One process of a throttle fleet on Redis (test/throttle/fleet.test.ts, bench/throttle.mjs),
// running the built package. Args: redisUrl prefix optionsJSON jobs seed [upstreamUrl].
// Waits for a line on stdin so all processes start together. Every job has a random priority and
// duration (seeded); the process prints one line per event, timestamped by the system clock that
// all processes share:
//   A <job> <at>   the instant the job's rate units were decided (the throttle's clock)
//   S <job> <ms>   the task began;   E <job> <ms>   the task ended (before its slot goes back)
//   P <ms> <pause> this process paused the key (an upstream's 429) for <pause> ms
// The last line, `D <json>`, holds its stats, failures, fetch statuses and Redis commands sent.
// and finally `D <json stats>`. With an upstream URL each job is a throttle.fetch of it.
import { redisFleetHead } from "./redis-fleet-head.mjs";

const [url, prefix, optionsJson, jobs, seed, upstream] = process.argv.slice(2);
const { throttle, random, commands, close } = redisFleetHead(url, prefix, optionsJson, seed);
const out = [];
const id = process.pid;
throttle.on("start", (e) => out.push(`A ${e.at}`));
throttle.on("pause", (e) => out.push(`P ${Date.now()} ${e.ms}`));

process.stdout.write("ready\n");
process.stdin.once("data", async () => {
  const runs = Array.from({ length: Number(jobs) }, (_, i) => {
    const job = `${id}-${i}`;
    const priority = Math.floor(random() * 10);
    const ms = Math.floor(random() * 20);
    if (upstream !== undefined) {
      return throttle.fetch(upstream, { headers: { "x-job": job } }, { priority }).then(async (r) => {
        await r.text();
        return r.status;
      });
    }
    return throttle.schedule(
      async () => {
        out.push(`S ${job} ${Date.now()}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        out.push(`E ${job} ${Date.now()}`);
      },
      { priority },
    );
  });
  const results = await Promise.allSettled(runs);
  const failed = results.filter((r) => r.status === "rejected").map((r) => String(r.reason));
  const statuses = results.filter((r) => r.status === "fulfilled").map((r) => r.value);
  await close();
  const stats = throttle.stats();
  process.stdout.write(`${out.join("\n")}\nD ${JSON.stringify({ stats, failed, statuses, commands: commands() })}\n`);
});

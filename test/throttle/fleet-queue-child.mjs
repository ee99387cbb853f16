// One process of a fleet-queue run (test/throttle/fleet-queue.test.ts, bench/throttle.mjs), on
// the built package. Args: redisUrl prefix optionsJSON jobs seed mode [depth].
//   mode "burst":  every job is scheduled at once, random priority 0-9 and duration 2-12 ms;
//   mode "steady": `depth` jobs are kept scheduled (a new one as each ends), priority 5;
//   mode "hold":   every job holds its slot until the process is killed (priority 0).
// Waits for a line on stdin so all processes start together; prints one line per event, stamped
// by the system clock all processes share:
//   Q <job> <priority> <ms>   scheduled      A <ms>   a start's decision instant (the store's)
//   S <job> <ms>   began      E <job> <ms>   ended
// then `D <json>`: failures and the Redis commands this process sent.
import { redisFleetHead } from "./redis-fleet-head.mjs";

const [url, prefix, optionsJson, jobs, seed, mode, depth] = process.argv.slice(2);
const { throttle, random, commands, close } = redisFleetHead(url, prefix, optionsJson, seed);
const id = process.pid;
// Written as they happen: a killed process's log must hold what it did.
const log = (line) => process.stdout.write(`${line}\n`);
// The warm-up key has its own limit: its starts are not the measured key's.
throttle.on("start", (e) => {
  if (e.key !== "warm-up") log(`A ${e.at}`);
});

function job(i, priority, ms) {
  const name = `${id}-${i}`;
  log(`Q ${name} ${priority} ${Date.now()}`);
  return throttle.schedule(
    async () => {
      log(`S ${name} ${Date.now()}`);
      if (ms < 0) await new Promise(() => setInterval(() => {}, 1000));
      await new Promise((resolve) => setTimeout(resolve, ms));
      log(`E ${name} ${Date.now()}`);
    },
    { priority },
  );
}

// The fleet link opens on a first job (its subscription): open it before the run is timed.
await throttle.schedule(async () => {}, { key: "warm-up" });
log("ready");
process.stdin.once("data", async () => {
  const n = Number(jobs);
  const runs = [];
  const lost = [];
  if (mode === "steady") {
    let next = 0;
    const lane = async () => {
      while (next < n) {
        const i = next++;
        await job(i, 5, 2 + Math.floor(random() * 10)).catch((e) => lost.push(String(e)));
      }
    };
    await Promise.all(Array.from({ length: Number(depth ?? 8) }, lane));
  } else {
    for (let i = 0; i < n; i++) {
      if (mode === "hold") runs.push(job(i, 0, -1));
      else runs.push(job(i, Math.floor(random() * 10), 2 + Math.floor(random() * 10)));
    }
  }
  const results = await Promise.allSettled(runs);
  const failed = [...lost, ...results.filter((r) => r.status === "rejected").map((r) => String(r.reason))];
  await close();
  log(`D ${JSON.stringify({ failed, commands: commands(), stats: throttle.stats() })}`);
});

// A node:cluster application for test/throttle/fleet-cluster.test.ts (the built package): the
// primary runs startClusterStore() and forks the workers; each worker runs one throttle named
// "fleet" on a ClusterStore. Args: mode optionsJSON jobs seed [depth].
//   mode "burst":  4 workers, every job scheduled at once, random priority 0-9, 2-12 ms;
//   mode "steady": 4 workers, `depth` jobs kept scheduled (a new one as each ends), priority 5;
//   mode "kill":   worker 0 holds every slot with 6 jobs of priority 0 (jobs that never end);
//                  once it holds them, worker 1 bursts `jobs` jobs; 200 ms later worker 0 is
//                  SIGKILLed (its line "K <ms>" is the kill's instant).
// Each worker prints one line per event, prefixed by its index and stamped by the one system
// clock: `<w> Q <job> <priority> <ms>` scheduled, `<w> A <ms>` a start's decision instant,
// `<w> S <job> <ms>` began, `<w> E <job> <ms>` ended, then `<w> D <json>` (failures, stats).
import cluster from "node:cluster";
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createThrottle, systemClock } from "../../dist/index.js";
import { ClusterStore, startClusterStore } from "../../dist/stores/cluster/index.js";

const [mode, optionsJson, jobs, seed, depth] = process.argv.slice(2);

if (cluster.isPrimary) {
  const primary = startClusterStore();
  const count = mode === "kill" ? 2 : 4;
  const workers = [];
  let ready = 0;
  let exited = 0;
  const fork = (i) => {
    const w = cluster.fork({ FLEET_INDEX: String(i) });
    workers[i] = w;
    w.on("message", (m) => {
      if (m?.fleet === "ready") {
        if (mode === "kill") {
          w.send({ fleet: "go" });
          if (i === 1) {
            setTimeout(() => {
              process.stdout.write(`0 K ${Date.now()}\n`);
              workers[0].process.kill("SIGKILL");
            }, 200);
          }
        } else if (++ready === count) for (const o of workers) o.send({ fleet: "go" });
      } else if (m?.fleet === "holding" && i === 0) fork(1);
    });
    w.on("exit", () => {
      if (++exited === count) {
        primary.stop();
        process.exit(0);
      }
    });
  };
  if (mode === "kill") fork(0);
  else for (let i = 0; i < count; i++) fork(i);
} else {
  const index = Number(process.env.FLEET_INDEX);
  const store = new ClusterStore({ timeoutMs: 10_000 });
  const throttle = createThrottle({ name: "fleet", store, clock: systemClock, ...JSON.parse(optionsJson) });
  const random = mulberry32(Number(seed) + index);
  const log = (line) => process.stdout.write(`${index} ${line}\n`);
  // Admissions of the run's key only (the warm-up's key has its own limit).
  throttle.on("start", (e) => {
    if (e.key !== "warm-up") log(`A ${e.at}`);
  });
  let started = 0;
  const job = (i, priority, ms) => {
    const name = `${index}-${i}`;
    log(`Q ${name} ${priority} ${Date.now()}`);
    return throttle.schedule(
      async () => {
        log(`S ${name} ${Date.now()}`);
        if (++started === 2 && ms < 0) process.send({ fleet: "holding" });
        if (ms < 0) await new Promise(() => setInterval(() => {}, 1000));
        await new Promise((resolve) => setTimeout(resolve, ms));
        log(`E ${name} ${Date.now()}`);
      },
      { priority },
    );
  };
  // The fleet queue opens on a first job: open it before the run.
  await throttle.schedule(async () => {}, { key: "warm-up" });
  process.on("message", async (m) => {
    if (m?.fleet !== "go") return;
    const n = Number(jobs);
    const runs = [];
    const lost = [];
    const hold = mode === "kill" && index === 0;
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
      for (let i = 0; i < (hold ? 6 : n); i++) {
        if (hold) runs.push(job(i, 0, -1));
        else runs.push(job(i, Math.floor(random() * 10), 2 + Math.floor(random() * 10)));
      }
    }
    const results = await Promise.allSettled(runs);
    const failed = [...lost, ...results.filter((r) => r.status === "rejected").map((r) => String(r.reason))];
    await throttle.close();
    log(`D ${JSON.stringify({ failed, stats: throttle.stats() })}`);
    process.disconnect();
  });
  process.send({ fleet: "ready" });
}

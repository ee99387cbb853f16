// One member of a fleet run (the built package), shared by the fleet applications
// (fleet-cluster-child.mjs: node:cluster workers; fleet-threads-child.mjs: worker threads;
// fleet-socket-child.mjs: unrelated processes on a ClusterStore socket): one throttle named
// "fleet" on `store`, jobs as the mode says, one log line per event stamped by the one system
// clock. Modes:
//   "burst":  every job scheduled at once, random priority 0-9, 2-12 ms;
//   "long":   as "burst", 50-250 ms a job, and says "started" as each starts (so a host can be
//             killed while others' jobs run);
//   "steady": `depth` jobs kept scheduled (a new one as each ends), priority 5;
//   "kill":   member 0 holds every slot with 6 jobs of priority 0 (jobs that never end) and says
//             "holding" once it holds two; the others burst.
// Lines: `<i> Q <job> <priority> <ms>` scheduled, `<i> A <ms>` a start's decision instant,
// `<i> S <job> <ms>` began, `<i> E <job> <ms>` ended, then `<i> D <json>` (failures, stats).
// `send` tells the application "ready" (after a warm-up job opened the fleet queue) and
// "holding"; `listen` hears its "go"; `end` runs after the D line.
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createThrottle, systemClock } from "../../dist/index.js";

/** Runs member `index` of a fleet (see the head). */
export async function fleetMember({ index, store, mode, optionsJson, jobs, seed, depth, log, send, listen, end }) {
  const throttle = createThrottle({ name: "fleet", store, clock: systemClock, ...JSON.parse(optionsJson) });
  const random = mulberry32(Number(seed) + index);
  const line = (text) => log(`${index} ${text}\n`);
  // Admissions of the run's key only (the warm-up's key has its own limit).
  throttle.on("start", (e) => {
    if (e.key !== "warm-up") line(`A ${e.at}`);
  });
  let started = 0;
  const job = (i, priority, ms) => {
    const name = `${index}-${i}`;
    line(`Q ${name} ${priority} ${Date.now()}`);
    return throttle.schedule(
      async () => {
        line(`S ${name} ${Date.now()}`);
        if (++started === 2 && ms < 0) send({ fleet: "holding" });
        // `until`: when this job will end, so the killer acts only while it still runs (a message
        // read late, on a loaded machine, would kill the host after the job ended).
        if (mode === "long") send({ fleet: "started", until: Date.now() + ms });
        if (ms < 0) await new Promise(() => setInterval(() => {}, 1000));
        await new Promise((resolve) => setTimeout(resolve, ms));
        line(`E ${name} ${Date.now()}`);
      },
      { priority },
    );
  };
  // The fleet queue opens on a first job: open it before the run.
  await throttle.schedule(async () => {}, { key: "warm-up" });
  listen(async (m) => {
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
        else if (mode === "long") runs.push(job(i, Math.floor(random() * 10), 50 + Math.floor(random() * 200)));
        else runs.push(job(i, Math.floor(random() * 10), 2 + Math.floor(random() * 10)));
      }
    }
    const results = await Promise.allSettled(runs);
    const failed = [...lost, ...results.filter((r) => r.status === "rejected").map((r) => String(r.reason))];
    await throttle.close();
    line(`D ${JSON.stringify({ failed, stats: throttle.stats() })}`);
    end();
  });
  send({ fleet: "ready" });
}

// A worker_threads application on SharedMemoryStore (the built package) for
// test/throttle-exit/idle-thread.test.ts. The main thread creates the store (so it hosts the
// fleet queues) with a throttle of its own that schedules nothing; each worker attaches the
// handle, makes the same throttle and schedules its jobs, and never calls `throttle.close()`.
// Args: mode workers jobs.
//   "await": a worker awaits its jobs and returns: it must end (issue 32, the outside attack's
//            finding 3: the queue's ref'd channel kept every worker, so the process, alive for good);
//   "fire":  a worker schedules its jobs without awaiting them and its code ends at once: it must
//            stay alive until they all ran (a job waiting for a grant holds its thread).
// The last stdout line: { ran: [jobs run per worker], exits: [exit code per worker] }.
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { createThrottle, systemClock } from "../../dist/index.js";
import { SharedMemoryStore } from "../../dist/stores/threads/index.js";

const options = (store) => ({
  name: "exit32-threads",
  store,
  clock: systemClock,
  rate: { algorithm: "fixed-window", limit: 4, windowMs: 1000 },
  concurrency: 2,
  leaseMs: 2000,
});

if (isMainThread) {
  const [mode, workers, jobs] = process.argv.slice(2);
  const store = new SharedMemoryStore({ maxKeys: 1000 });
  createThrottle(options(store));
  const ran = Array.from({ length: Number(workers) }, () => 0);
  const exits = [];
  for (let i = 0; i < Number(workers); i++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { handle: store.handle, mode, jobs: Number(jobs) } });
    w.on("message", () => ran[i]++);
    w.on("exit", (code) => {
      exits[i] = code;
      if (exits.filter((c) => c !== undefined).length === Number(workers)) console.log(JSON.stringify({ ran, exits }));
    });
  }
} else {
  const { handle, mode, jobs } = workerData;
  const throttle = createThrottle(options(SharedMemoryStore.attach(handle)));
  const all = [];
  for (let j = 0; j < jobs; j++) {
    all.push(
      throttle.schedule(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          parentPort.postMessage("ran");
        },
        { key: "api" },
      ),
    );
  }
  if (mode === "await") await Promise.all(all);
}

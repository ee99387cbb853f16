// A worker_threads application for test/throttle/fleet-threads.test.ts (the built package): the
// main thread creates the SharedMemoryStore (and so keeps the fleet queues) and starts the
// threads; each thread runs one throttle named "fleet" on the attached store. Args: mode
// optionsJSON jobs seed [depth]; modes as in fleet-cluster-child.mjs ("kill": thread 0 is
// ended with worker.terminate() 200 ms after thread 1 starts). Same log lines, same clock.
import { isMainThread, Worker, workerData } from "node:worker_threads";
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createThrottle, systemClock } from "../../dist/index.js";
import { SharedMemoryStore } from "../../dist/stores/threads/index.js";

if (isMainThread) {
  const [mode, optionsJson, jobs, seed, depth] = process.argv.slice(2);
  const store = new SharedMemoryStore({ maxKeys: 1000, recordWords: 16 });
  const count = mode === "kill" ? 2 : 4;
  const workers = [];
  let ready = 0;
  let exited = 0;
  const start = (i) => {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { handle: store.handle, index: i, mode, optionsJson, jobs, seed, depth },
    });
    workers[i] = w;
    w.on("message", (m) => {
      if (m?.fleet === "ready") {
        if (mode === "kill") {
          w.postMessage({ fleet: "go" });
          if (i === 1) {
            setTimeout(() => {
              process.stdout.write(`0 K ${Date.now()}\n`);
              void workers[0].terminate();
            }, 200);
          }
        } else if (++ready === count) for (const o of workers) o.postMessage({ fleet: "go" });
      } else if (m?.fleet === "holding" && i === 0) start(1);
      else if (m?.fleet === "line") process.stdout.write(m.line);
    });
    w.on("error", (e) => process.stderr.write(`thread ${i}: ${e.stack}\n`));
    w.on("exit", () => {
      if (++exited === count) process.exit(0);
    });
  };
  if (mode === "kill") start(0);
  else for (let i = 0; i < count; i++) start(i);
} else {
  const { parentPort } = await import("node:worker_threads");
  const { handle, index, mode, optionsJson, jobs, seed, depth } = workerData;
  const store = SharedMemoryStore.attach(handle);
  const throttle = createThrottle({ name: "fleet", store, clock: systemClock, ...JSON.parse(optionsJson) });
  const random = mulberry32(Number(seed) + index);
  // Through the parent (a thread's own stdout is a stream the parent drains late).
  const log = (line) => parentPort.postMessage({ fleet: "line", line: `${index} ${line}\n` });
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
        if (++started === 2 && ms < 0) parentPort.postMessage({ fleet: "holding" });
        if (ms < 0) await new Promise(() => setInterval(() => {}, 1000));
        await new Promise((resolve) => setTimeout(resolve, ms));
        log(`E ${name} ${Date.now()}`);
      },
      { priority },
    );
  };
  await throttle.schedule(async () => {}, { key: "warm-up" });
  parentPort.on("message", async (m) => {
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
    parentPort.close();
  });
  parentPort.postMessage({ fleet: "ready" });
}

// A worker_threads application for test/throttle/fleet-threads.test.ts (the built package): the
// main thread creates the SharedMemoryStore (and so keeps the fleet queues) and starts the
// threads; each thread is a fleet member (fleet-member.mjs) on the attached store. Args: mode
// optionsJSON jobs seed [depth]; modes as in fleet-cluster-child.mjs ("kill": thread 0 is
// ended with worker.terminate() 200 ms after thread 1 starts), and "kill-host": thread 0
// creates the store (so hosts the queues), the others attach it, all burst jobs of 50-250 ms,
// and thread 0 is terminated 0.8 s into the run as another's job starts ("0 K <ms>"). Same log
// lines, same clock.
import { isMainThread, Worker, workerData } from "node:worker_threads";
import { SharedMemoryStore } from "../../dist/stores/threads/index.js";
import { conductor } from "./fleet-conductor.mjs";
import { fleetMember } from "./fleet-member.mjs";

if (isMainThread) {
  const [mode, optionsJson, jobs, seed, depth] = process.argv.slice(2);
  // kill-host: thread 0 creates the store (and so hosts first); the others attach its handle.
  let handle = mode === "kill-host" ? undefined : new SharedMemoryStore({ maxKeys: 1000, recordWords: 16 }).handle;
  const count = mode === "kill" ? 2 : 4;
  const workers = [];
  const start = (i) => {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { handle, index: i, mode, optionsJson, jobs, seed, depth },
    });
    workers[i] = w;
    run.started(i, (m) => w.postMessage(m));
    w.on("message", (m) => {
      if (m?.fleet === "handle") {
        handle = m.handle;
        for (let j = 1; j < count; j++) start(j);
      } else if (m?.fleet === "line") process.stdout.write(m.line);
      else run.hear(i, m);
    });
    w.on("error", (e) => process.stderr.write(`thread ${i}: ${e.stack}\n`));
    w.on("exit", () => run.exited());
  };
  const run = conductor({
    mode,
    count,
    start,
    kill: (i) => void workers[i].terminate(),
    done: () => process.exit(0),
  });
  if (mode === "kill" || mode === "kill-host") start(0);
  else for (let i = 0; i < count; i++) start(i);
} else {
  const { parentPort } = await import("node:worker_threads");
  const { handle, index, mode, optionsJson, jobs, seed, depth } = workerData;
  let store;
  if (handle === undefined) {
    store = new SharedMemoryStore({ maxKeys: 1000, recordWords: 40 }); // room for a sliding log of 30
    parentPort.postMessage({ fleet: "handle", handle: store.handle });
  } else store = SharedMemoryStore.attach(handle);
  await fleetMember({
    index,
    store,
    mode: mode === "kill-host" ? "long" : mode,
    optionsJson,
    jobs,
    seed,
    depth,
    // Through the parent (a thread's own stdout is a stream the parent drains late).
    log: (line) => parentPort.postMessage({ fleet: "line", line }),
    send: (m) => parentPort.postMessage(m),
    listen: (on) => parentPort.on("message", on),
    end: () => parentPort.close(),
  });
}

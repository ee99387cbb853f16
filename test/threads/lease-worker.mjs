// A worker of test/threads/lease-threads.test.ts: hammers one concurrency rule on the
// SharedMemoryStore in `workerData`, counting its own work in flight per key in shared memory
// (incremented once admitted, decremented before release(), so it lies inside the lease), and
// records the highest count it saw. Built package only (as test/threads/worker.mjs).
import { parentPort, workerData } from "node:worker_threads";
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createLimiter } from "../../dist/limiter.js";
import { SharedMemoryStore } from "../../dist/stores/threads/index.js";

const { handle, spec, seed, iterations, counters, clockCell, ticking } = workerData;
const store = SharedMemoryStore.attach(handle);
const inFlight = new Int32Array(counters);
const time = new Float64Array(clockCell);
// A shared clock: fixed (every lease of one instant), or one that ticks per admission anywhere
// (threads read it, then decide: a stalled thread decides behind the others).
let ticks = 0;
const clock = { now: () => time[0] + (ticking === true ? ticks : 0) };
// ticking "system": no injected clock (each thread reads Date.now(), as a deployment does).
const limiter = createLimiter(spec, { store, ...(ticking === "system" ? {} : { clock }), name: "lease-threads" });
const rnd = mulberry32(seed);
let admitted = 0;
let max = 0;
const held = [];
for (let i = 0; i < iterations; i++) {
  if (ticking === true) ticks = i;
  const key = rnd() < 0.5 ? 0 : 1;
  const d = limiter.tryAcquire(`k${key}`);
  if (d.allowed) {
    admitted++;
    const n = Atomics.add(inFlight, key, 1) + 1;
    if (n > max) max = n;
    held.push([key, d]);
  }
  // Release some of what this thread holds, in a seeded order.
  while (held.length > 0 && rnd() < 0.6) {
    const [k, h] = held.splice(Math.floor(rnd() * held.length), 1)[0];
    Atomics.sub(inFlight, k, 1);
    h.release();
  }
}
for (const [k, h] of held) {
  Atomics.sub(inFlight, k, 1);
  h.release();
}
store.close();
parentPort.postMessage({ admitted, max });

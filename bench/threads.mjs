// sluice/threads benchmark, side by side in one run: decisions per second on SharedMemoryStore
// from 1, 2, 4 and 8 worker threads (total and per thread, each thread on its own keys, started
// together), and from the main thread itself, against MemoryStore in one thread, ClusterStore
// over IPC (one node:cluster worker, 64 in flight) and RedisStore (127.0.0.1:6379, 64 in flight).
// Every store decides gcra over 10k keys per thread with a limit never reached. Figures are
// medians over BENCH_ROUNDS (default 3) rounds, rounds interleaved. The one-thread ratio
// (SharedMemoryStore ÷ MemoryStore time per decision, main thread) is the median of
// BENCH_RATIO_ROUNDS (default 15) short rounds alternating the two stores, at 10k and at 100k
// keys, each store holding just its keys (a SharedMemoryStore with maxKeys twice the keys); and
// at 10k keys whose texts are built per decision, as a server builds them from requests (a
// `Map` then hashes the new string: the keys made once carry V8's cached hash). Each ratio is
// measured in a process of its own holding one SharedMemoryStore, as a service's thread does.
// The machine's core count bounds what more threads can add: the line "cores" says how many.
// It also prints the shared buffer's bytes per key (stats().bytes / maxKeys).
// Run with: npm run build && node bench/threads.mjs   (REDIS_URL selects the server)
import { execFileSync } from "node:child_process";
import cluster from "node:cluster";
import { availableParallelism, loadavg } from "node:os";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { Redis } from "ioredis";
import { createLimiter, MemoryStore } from "../dist/index.js";
import { ClusterStore, startClusterStore } from "../dist/stores/cluster/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";
import { SharedMemoryStore } from "../dist/stores/threads/index.js";

const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 200_000);
const REMOTE_DECISIONS = Number(process.env.BENCH_REMOTE_DECISIONS ?? 40_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RATIO_ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 15);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const REDIS = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const SPEC = { algorithm: "gcra", limit: 1_000_000, periodMs: 60_000 };
const THREADS = [1, 2, 4, 8];

if (!isMainThread) await threadWorker();
else if (process.env.BENCH_RATIO_CASE !== undefined) ratioProcess(JSON.parse(process.env.BENCH_RATIO_CASE));
else if (cluster.isPrimary) await main();
else await clusterWorker();

/** Decisions on one limiter, synchronously, over `keys` starting at `offset`; returns seconds. */
function decide(limiter, keys, n, offset) {
  const started = performance.now();
  let allowed = 0;
  for (let i = 0; i < n; i++) if (limiter.tryAcquire(keys[(offset + i * 7919) % keys.length]).allowed) allowed++;
  if (allowed !== n) throw new Error(`only ${allowed} of ${n} allowed`);
  return (performance.now() - started) / 1000;
}

/** A worker thread: attaches, waits for the start signal, decides, reports its seconds. */
async function threadWorker() {
  const { handle, control, thread } = workerData;
  const store = SharedMemoryStore.attach(handle);
  const limiter = createLimiter(SPEC, { store, name: "bench" });
  const keys = Array.from({ length: KEYS }, (_, i) => `t${thread}:user:${i}`);
  decide(limiter, keys, 3 * KEYS, 0); // warm up: every key stored, the code optimised
  const flag = new Int32Array(control);
  Atomics.add(flag, 1, 1);
  Atomics.notify(flag, 1);
  while (Atomics.load(flag, 0) === 0) Atomics.wait(flag, 0, 0, 100);
  const seconds = decide(limiter, keys, DECISIONS, thread * 31);
  store.close();
  parentPort.postMessage({ seconds });
}

/** `decide`, with each key's text built anew for its decision (as a server builds it from a request). */
function decideBuilt(limiter, ids, n, offset) {
  const started = performance.now();
  let allowed = 0;
  for (let i = 0; i < n; i++)
    if (limiter.tryAcquire(`user:${ids[(offset + i * 7919) % ids.length]}`).allowed) allowed++;
  if (allowed !== n) throw new Error(`only ${allowed} of ${n} allowed`);
  return (performance.now() - started) / 1000;
}

/**
 * Median of `rounds` per-round ratios: SharedMemoryStore's time per decision ÷ MemoryStore's, on
 * `n` keys (`built`: each key's text built per decision, else made once and reused).
 */
function oneThreadRatio(n, rounds, built = false) {
  const keys = built ? Array.from({ length: n }, (_, i) => i) : Array.from({ length: n }, (_, i) => `user:${i}`);
  const run = built ? decideBuilt : decide;
  const memory = createLimiter(SPEC, { store: new MemoryStore(), name: "ratio" });
  const shared = createLimiter(SPEC, { store: new SharedMemoryStore({ maxKeys: 2 * n }), name: "ratio" });
  run(memory, keys, 3 * n, 0);
  run(shared, keys, 3 * n, 0);
  const ratios = [];
  const per = Math.max(50_000, n);
  for (let r = 0; r < rounds; r++) ratios.push(run(shared, keys, per, r) / run(memory, keys, per, r));
  ratios.sort((a, b) => a - b);
  return { median: ratios[rounds >> 1], low: ratios[rounds >> 2], high: ratios[(3 * rounds) >> 2] };
}

/**
 * `oneThreadRatio` in a process of its own, where the thread holds one SharedMemoryStore, as a
 * service's thread does: this process holds several, and a call site that has seen several
 * stores' WebAssembly instances no longer calls one directly (some 10% more per decision).
 */
function ratioInProcess(n, built) {
  const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname], {
    env: { ...process.env, BENCH_RATIO_CASE: JSON.stringify({ n, built }) },
    encoding: "utf8",
  });
  return JSON.parse(out);
}

/** The child of `ratioInProcess`: prints the ratio as JSON. */
function ratioProcess({ n, built }) {
  console.log(JSON.stringify(oneThreadRatio(n, RATIO_ROUNDS, built)));
}

/** Bytes of the shared buffer per key it was sized for. */
function bytesPerKey(options) {
  const store = new SharedMemoryStore(options);
  return store.stats().bytes / store.maxKeys;
}

/** Runs `n` threads on one SharedMemoryStore; total decisions/s and the mean per thread. */
async function threads(store, n, round) {
  const control = new SharedArrayBuffer(8);
  const flag = new Int32Array(control);
  const workers = Array.from(
    { length: n },
    (_, thread) =>
      new Worker(new URL(import.meta.url), {
        workerData: { handle: store.handle, control, thread: round * 8 + thread },
      }),
  );
  const done = workers.map((w) => new Promise((resolve, reject) => w.once("message", resolve).once("error", reject)));
  while (Atomics.load(flag, 1) < n) await new Promise((r) => setTimeout(r, 5));
  const started = performance.now();
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  const reports = await Promise.all(done);
  const wall = (performance.now() - started) / 1000;
  await Promise.all(workers.map((w) => w.terminate()));
  const perThread = reports.reduce((s, r) => s + DECISIONS / r.seconds, 0) / n;
  return { total: (n * DECISIONS) / wall, perThread };
}

/** Remote stores: `n` decisions with 64 in flight; decisions/s. */
async function remote(limiter, keys, n) {
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < n) {
      const i = next++;
      const d = await limiter.tryAcquire(keys[(i * 7919) % keys.length]);
      if (!d.allowed || d.failure !== undefined) throw new Error("a remote decision was not an admission");
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return n / ((performance.now() - started) / 1000);
}

async function main() {
  startClusterStore();
  const child = cluster.fork();
  const ask = (message) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m?.bench === undefined) return;
        child.off("message", on);
        resolve(m.bench);
      };
      child.on("message", on);
      if (message !== undefined) child.send(message);
    });
  await ask(); // ready

  const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
  const memory = createLimiter(SPEC, { store: new MemoryStore(), name: "bench" });
  const sharedStore = new SharedMemoryStore({ maxKeys: 8 * 8 * KEYS + KEYS });
  const sharedHere = createLimiter(SPEC, { store: sharedStore, name: "bench-main" });
  const client = new Redis(REDIS, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
  const redis = createLimiter(SPEC, {
    store: new RedisStore({ client, prefix: `sluice-bench-threads:${process.pid}:`, timeoutMs: 5000 }),
    name: "bench",
  });
  if (client.status !== "ready") await new Promise((resolve) => client.once("ready", resolve));
  decide(memory, keys, 20_000, 0);
  decide(sharedHere, keys, 20_000, 0);
  await remote(redis, keys, 2000);

  const results = { memory: [], sharedMain: [], cluster: [], redis: [] };
  for (const n of THREADS) results[`threads${n}`] = [];
  for (let round = 0; round < ROUNDS; round++) {
    results.memory.push(DECISIONS / decide(memory, keys, DECISIONS, round));
    results.sharedMain.push(DECISIONS / decide(sharedHere, keys, DECISIONS, round));
    for (const n of THREADS) results[`threads${n}`].push(await threads(sharedStore, n, round));
    results.cluster.push(await ask({ bench: "cluster" }));
    results.redis.push(await remote(redis, keys, REMOTE_DECISIONS));
  }
  const ratio10k = ratioInProcess(KEYS, false);
  const ratio100k = ratioInProcess(10 * KEYS, false);
  const ratioBuilt = ratioInProcess(KEYS, true);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (x) => Math.round(x).toLocaleString("en").padStart(11);
  const mem = median(results.memory);
  const main = median(results.sharedMain);
  const clusterRate = median(results.cluster);
  const redisRate = median(results.redis);
  console.log(
    `gcra, ${KEYS} keys per thread, ${DECISIONS} decisions per thread, ${ROUNDS} rounds; cores ${availableParallelism()} ` +
      `(load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(" ")})`,
  );
  console.log(`MemoryStore, 1 thread                 ${fmt(mem)} decisions/s`);
  console.log(
    `SharedMemoryStore, main thread        ${fmt(main)} decisions/s   ${(mem / main).toFixed(2)}× MemoryStore's time per decision ` +
      `(on the threads' store: maxKeys ${(8 * 8 * KEYS + KEYS).toLocaleString("en")}, mostly cold; the ratios below compare like with like)`,
  );
  const range = (r) => `${r.median.toFixed(2)}× (quartiles ${r.low.toFixed(2)}–${r.high.toFixed(2)})`;
  console.log(`One thread, SharedMemoryStore ÷ MemoryStore time per decision, alternating rounds:`);
  console.log(`  10k keys  ${range(ratio10k)}`);
  console.log(`  100k keys ${range(ratio100k)}`);
  console.log(`  10k keys, each key's text built per decision (as a server builds it) ${range(ratioBuilt)}`);
  for (const n of THREADS) {
    const rows = results[`threads${n}`];
    const total = median(rows.map((r) => r.total));
    const per = median(rows.map((r) => r.perThread));
    console.log(
      `SharedMemoryStore, ${n} worker thread${n === 1 ? " " : "s"}     ${fmt(total)} decisions/s total, ${fmt(per)} per thread`,
    );
  }
  console.log(`ClusterStore over IPC (1 worker, ${IN_FLIGHT} in flight) ${fmt(clusterRate)} decisions/s`);
  console.log(`RedisStore (${IN_FLIGHT} in flight)              ${fmt(redisRate)} decisions/s`);
  console.log(
    `SharedMemoryStore (1 worker thread) ÷ ClusterStore: ${(median(results.threads1.map((r) => r.total)) / clusterRate).toFixed(1)}×; ` +
      `÷ RedisStore: ${(median(results.threads1.map((r) => r.total)) / redisRate).toFixed(1)}×`,
  );
  for (const recordWords of [6, 3]) {
    const options = { maxKeys: 100_000, recordWords };
    console.log(
      `SharedMemoryStore bytes per key, maxKeys 100,000, recordWords ${recordWords}${recordWords === 6 ? " (default)" : ""}: ` +
        `${bytesPerKey(options).toFixed(1)}`,
    );
  }
  client.disconnect();
  child.kill();
  process.exit(0);
}

async function clusterWorker() {
  const limiter = createLimiter(SPEC, { store: new ClusterStore({ timeoutMs: 5000 }), name: "bench" });
  const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
  await remote(limiter, keys, 2000);
  process.on("message", async (message) => {
    if (message?.bench !== "cluster") return; // sluice's own replies
    process.send({ bench: await remote(limiter, keys, REMOTE_DECISIONS) });
  });
  process.send({ bench: "ready" });
}

// sluice/cluster benchmark: decisions per second across 4 node:cluster workers sharing one
// limit through ClusterStore (the primary's MemoryStore over IPC), through ClusterStore's socket
// transport (one worker hosts the MemoryStore on a Unix socket, as under PM2 cluster mode), and
// on RedisStore (one ioredis client per worker, 127.0.0.1:6379), in one run. Each worker makes
// BENCH_DECISIONS decisions (default 50k) over 10k keys with 64 in flight (gcra, a limit never
// reached). Rounds are interleaved (the order rotates each round) and the
// figures are medians over BENCH_ROUNDS (default 5) rounds; primary CPU per decision is read
// from process.cpuUsage() in the primary, which does all of ClusterStore's deciding over IPC
// (with the socket transport a worker decides, so the primary's figure says nothing there).
// Run with: npm run build && node bench/cluster.mjs   (REDIS_URL selects the server)
import cluster from "node:cluster";
import { rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { createLimiter } from "../dist/index.js";
import { ClusterStore, startClusterStore } from "../dist/stores/cluster/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";

const WORKERS = 4;
const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 50_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const SPEC = { algorithm: "gcra", limit: 1_000_000, periodMs: 60_000 };
/** The socket transport's path: one per bench run (the workers' parent is the primary). */
const SOCKET = join(tmpdir(), `sluice-bench-${cluster.isPrimary ? process.pid : process.ppid}.sock`);
const NAMES = { cluster: "ClusterStore (IPC)   ", socket: "ClusterStore (socket)", redis: "RedisStore           " };

if (cluster.isPrimary) await primary();
else await worker();

async function primary() {
  startClusterStore();
  const workers = Array.from({ length: WORKERS }, () => cluster.fork());
  // Workers' IPC also carries sluice's own messages (channel "sluice:cluster"): wait for ours.
  const next = (w) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m?.bench === undefined) return;
        w.off("message", on);
        resolve(m.bench);
      };
      w.on("message", on);
    });
  await Promise.all(workers.map(next)); // ready
  const run = async (store, round) => {
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    const reports = await Promise.all(
      workers.map((w) => {
        const report = next(w);
        w.send({ bench: store, round });
        return report;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const total = WORKERS * DECISIONS;
    const p99 = Math.max(...reports.map((r) => r.p99));
    const allowed = reports.reduce((n, r) => n + r.allowed, 0);
    return { perSecond: total / seconds, p99, allowed, primaryUs: (cpu.user + cpu.system) / total };
  };
  const results = { cluster: [], socket: [], redis: [] };
  const stores = Object.keys(results);
  for (let round = 0; round < ROUNDS; round++) {
    const order = stores.map((_, i) => stores[(i + round) % stores.length]);
    for (const store of order) results[store].push(await run(store, round));
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const summary = {};
  for (const [store, rounds] of Object.entries(results)) {
    summary[store] = {
      perSecond: median(rounds.map((r) => r.perSecond)),
      p99: median(rounds.map((r) => r.p99)),
      primaryUs: median(rounds.map((r) => r.primaryUs)),
      allAllowed: rounds.every((r) => r.allowed === WORKERS * DECISIONS),
    };
  }
  console.log(
    `${WORKERS} workers × ${DECISIONS} decisions, ${KEYS} keys, ${IN_FLIGHT} in flight each, ${ROUNDS} rounds ` +
      `(load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(" ")})`,
  );
  for (const [store, s] of Object.entries(summary)) {
    console.log(
      `${NAMES[store]}  ${Math.round(s.perSecond).toLocaleString("en")} decisions/s` +
        `  p99 ${s.p99.toFixed(2)} ms  primary CPU ${store === "cluster" ? `${s.primaryUs.toFixed(2)} µs/decision` : "n/a"}` +
        `  every decision allowed: ${s.allAllowed}`,
    );
  }
  console.log(`ClusterStore (IPC) ÷ RedisStore: ${(summary.cluster.perSecond / summary.redis.perSecond).toFixed(2)}×`);
  console.log(
    `ClusterStore (socket) ÷ RedisStore: ${(summary.socket.perSecond / summary.redis.perSecond).toFixed(2)}×`,
  );
  for (const w of workers) w.kill();
  rmSync(SOCKET, { force: true }); // the hosting worker is killed, not closed: its file stays
  process.exit(0);
}

async function worker() {
  const prefix = `sluice-bench-cluster:${process.ppid}:`;
  const client = new Redis(URL, { enableOfflineQueue: true });
  const limiters = {
    cluster: createLimiter(SPEC, { store: new ClusterStore({ timeoutMs: 5000 }), name: "bench" }),
    socket: createLimiter(SPEC, { store: new ClusterStore({ socket: SOCKET, timeoutMs: 5000 }), name: "bench" }),
    redis: createLimiter(SPEC, { store: new RedisStore({ client, prefix, timeoutMs: 5000 }), name: "bench" }),
  };
  const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
  process.on("message", async (message) => {
    const { bench, round } = message ?? {};
    const limiter = limiters[bench];
    if (limiter === undefined) return; // sluice's own replies
    const latencies = new Float64Array(DECISIONS);
    let next = 0;
    let allowed = 0;
    const offset = (cluster.worker.id * 7919 + round * 104729) % KEYS;
    const lane = async () => {
      while (next < DECISIONS) {
        const i = next++;
        const t0 = performance.now();
        const d = await limiter.tryAcquire(keys[(offset + i * 7919) % KEYS]);
        latencies[i] = performance.now() - t0;
        if (d.allowed && d.failure === undefined) allowed++;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    latencies.sort();
    process.send({ bench: { allowed, p99: latencies[Math.floor(DECISIONS * 0.99)] } });
  });
  await client.ping();
  process.send({ bench: "ready" });
}

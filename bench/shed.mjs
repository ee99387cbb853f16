// Load shedding on a really overloaded server, and what loadShed costs per request.
//
// 1. Overload. test/support/shed-server.mjs is a Fastify app whose GET /work takes one of 4
//    slots (a pool), burns 1 ms of CPU and holds the slot 40 ms: about 95 requests a second.
//    Its capacity and unloaded p99 are measured first (4 connections, no queue). Then each
//    variant gets a fresh server, driven at BENCH_FACTOR × capacity over loopback by an open
//    loop (requests at even intervals whatever the answers, each with a client timeout, as real
//    clients have; autocannon's overallRate sends each connection's quota at the top of every
//    second, a burst rather than a rate, so it drives only the capacity runs): no shedding,
//    loadShed with a fixed limit (2 × the slots), loadShed({ limit: "adaptive" }) on its
//    defaults, and @fastify/under-pressure (event-loop delay 100 ms / utilization 0.9).
//    Reported: goodput (2xx a second, and as a share of capacity), the share of answers that
//    were 2xx, the p50/p99 of the 2xx answers (and p99 over the unloaded p99), 503s, timeouts.
// 2. Overhead. GET /hello (answers at once) on three servers, bare, with loadShed (a fixed
//    limit never reached) and with under-pressure; each server reads its own process.cpuUsage()
//    around BENCH_REQUESTS requests, rounds rotate the order, and the median ratio to the bare
//    app's CPU per request of the same round is reported with its range.
//
// Run: npm run build && node bench/shed.mjs
// Env: BENCH_SECONDS per overload run (default 8), BENCH_FACTOR (default 2.5), BENCH_TIMEOUT
// client timeout in s (default 2), BENCH_ROUNDS overhead rounds
// (default 8), BENCH_REQUESTS per overhead block (default 4000), BENCH_PARTS ("overload,overhead"),
// BENCH_SLOTS / BENCH_HOLD_MS / BENCH_BURN_MS (the pool: default 4 / 40 / 1).
import { drive, openLoop, quantile, startShedServer } from "../test/support/shed-load.mjs";

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const SECONDS = env("BENCH_SECONDS", 8);
const FACTOR = env("BENCH_FACTOR", 2.5);
const TIMEOUT = env("BENCH_TIMEOUT", 2);
const ROUNDS = env("BENCH_ROUNDS", 8);
const REQUESTS = env("BENCH_REQUESTS", 4000);
const PARTS = (process.env.BENCH_PARTS ?? "overload,overhead").split(",");
// Pool-bound on purpose: on a shared, loaded machine a CPU-bound server's capacity is whatever
// the other processes leave it; the pool's is fixed.
const POOL = { slots: env("BENCH_SLOTS", 4), holdMs: env("BENCH_HOLD_MS", 40), burnMs: env("BENCH_BURN_MS", 1) };

const round = (x, digits = 1) => Number(x.toFixed(digits));

async function overload() {
  const base = await startShedServer({ ...POOL, mode: "none" });
  await drive(`${base.url}/work`, { connections: POOL.slots, duration: 1 }); // warm-up
  const calm = await drive(`${base.url}/work`, { connections: POOL.slots, duration: SECONDS });
  await base.stop();
  const capacity = calm.ok.length / SECONDS;
  const unloadedP99 = quantile(calm.ok, 0.99);
  const rate = Math.round(capacity * FACTOR);
  console.log(
    `capacity ${round(capacity)} req/s, unloaded p50 ${quantile(calm.ok, 0.5)} ms p99 ${unloadedP99} ms; ` +
      `offered ${rate} req/s (${FACTOR}×, open loop), client timeout ${TIMEOUT} s, ${SECONDS} s each`,
  );
  const variants = {
    "no shedding": { mode: "none" },
    [`loadShed fixed (limit ${POOL.slots * 2})`]: { mode: "fixed", shed: { limit: POOL.slots * 2 } },
    "loadShed adaptive": { mode: "adaptive", shed: {} },
    "@fastify/under-pressure": { mode: "under-pressure" },
  };
  const rows = [];
  for (const [name, config] of Object.entries(variants)) {
    const server = await startShedServer({ ...POOL, ...config });
    const run = await openLoop(`${server.url}/work`, { rate, seconds: SECONDS, timeoutMs: TIMEOUT * 1000 });
    const stats = await server.stats();
    await server.stop();
    const answered = run.sent;
    const goodput = run.ok.length / SECONDS;
    const p99 = quantile(run.ok, 0.99);
    rows.push({
      variant: name,
      "goodput/s": round(goodput),
      "goodput %cap": round((100 * goodput) / capacity),
      "2xx %": round((100 * run.ok.length) / Math.max(1, answered)),
      "p50 ms": quantile(run.ok, 0.5),
      "p99 ms": p99,
      "p99/unloaded": round(p99 / unloadedP99, 2),
      503: run.statuses[503] ?? 0,
      timeouts: run.timeouts,
      "final limit": stats.shed?.limit ?? "",
    });
  }
  console.table(rows);
}

async function overhead() {
  const variants = {
    bare: { mode: "none" },
    loadShed: { mode: "fixed", shed: { limit: 1_000_000 } },
    "under-pressure": { mode: "under-pressure" },
  };
  const servers = {};
  for (const [name, config] of Object.entries(variants)) {
    servers[name] = await startShedServer({ ...POOL, ...config });
    await drive(`${servers[name].url}/hello`, { connections: 50, amount: 5000 }); // warm-up
  }
  const cpuPerRequest = async (server) => {
    const before = (await server.stats()).cpu;
    await drive(`${server.url}/hello`, { connections: 50, amount: REQUESTS });
    const after = (await server.stats()).cpu;
    return (after.user + after.system - before.user - before.system) / REQUESTS;
  };
  const names = Object.keys(variants);
  const ratios = Object.fromEntries(names.filter((n) => n !== "bare").map((n) => [n, []]));
  const bareUs = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    const us = {};
    for (const name of order) us[name] = await cpuPerRequest(servers[name]);
    bareUs.push(us.bare);
    for (const name of Object.keys(ratios)) ratios[name].push(us[name] / us.bare);
  }
  for (const server of Object.values(servers)) await server.stop();
  console.log(
    `overhead: server CPU per GET /hello over the bare Fastify app (median of ${ROUNDS} rounds × ${REQUESTS})`,
  );
  console.log(`  bare: ${round(quantile(bareUs, 0.5))} µs/request`);
  for (const [name, list] of Object.entries(ratios)) {
    console.log(
      `  ${name}: ${round(quantile(list, 0.5), 3)}× (range ${round(Math.min(...list), 3)}–${round(Math.max(...list), 3)})`,
    );
  }
}

if (PARTS.includes("overload")) await overload();
if (PARTS.includes("overhead")) await overhead();

// Load shedding on a really overloaded server, and what loadShed costs per request.
//
// 1. Overload. test/support/shed-server.mjs is a Fastify app whose GET /work takes one of 4
//    slots (a pool), burns 1 ms of CPU and holds the slot 40 ms: about 95 requests a second.
//    Its unloaded p50/p99 are measured first (4 connections: the pool full, no queue), then its
//    capacity (8 connections: a queue of one a slot, so no slot waits for a client). Then each
//    variant gets a fresh server, warmed by a second of the unloaded load, then driven at BENCH_FACTOR × the capacity measured in the same
//    round (the machine's other work moves it) over loopback by an open
//    loop (requests at even intervals whatever the answers, each with a client timeout, as real
//    clients have; autocannon's overallRate sends each connection's quota at the top of every
//    second, a burst rather than a rate, so it drives only the capacity runs). BENCH_CRITICAL
//    (20%) of the offered requests are critical (x-priority: 0), the rest priority 5. Variants:
//    no shedding; loadShed with a fixed limit (2 × the slots); loadShed({ limit: "adaptive" })
//    on its defaults; each of the two with reserve { 0: 0.75 } (the flood may fill only a quarter
//    of the limit, 2 of 8: the pool's queue stays short, so the critical traffic's own
//    concurrency, its rate × its latency, stays well inside its 6 slots); @fastify/under-pressure
//    (event-loop delay 100 ms / utilization 0.9). Reported: goodput (2xx a second as a share
//    of capacity), the share of answers that were 2xx, the p50/p99 of the 2xx answers
//    (and p99 over the unloaded p99), the share of critical requests answered 2xx, 503s,
//    client timeouts, and the limit (median and range, sampled every 100 ms after the first second).
//    On a shared machine one stall moves a run's p99: each variant runs once a round, in
//    rotated order, and the medians over the rounds are reported (with the p99 ratio's range
//    and the worst round's critical share); each run's figures are printed as it ends.
// 2. Overhead. GET /hello (answers at once) on three servers, bare, with loadShed (a fixed
//    limit never reached) and with under-pressure; each server reads its own process.cpuUsage()
//    around BENCH_REQUESTS requests, rounds rotate the order, and the median ratio to the bare
//    app's CPU per request of the same round is reported with its range.
//
// Run: npm run build && node bench/shed.mjs
// Env: BENCH_SECONDS per overload run (default 8), BENCH_OVERLOAD_ROUNDS (default 3),
// BENCH_FACTOR (default 2.5), BENCH_TIMEOUT client timeout in s (default 2), BENCH_CRITICAL share of critical requests (default 0.2),
// BENCH_VARIANTS (a comma-separated list of substrings of variant names: runs only those),
// BENCH_ROUNDS overhead rounds (default 8), BENCH_REQUESTS per overhead block (default 4000),
// BENCH_PARTS ("overload,overhead"), BENCH_TRACE=1 (each run's slowest 1% split into pool wait,
// hold and time outside the handler, the server's event-loop stalls, the limit and requests in
// flight every 100 ms), BENCH_SLOTS / BENCH_HOLD_MS / BENCH_BURN_MS (the pool:
// default 4 / 40 / 1).
import { loadavg } from "node:os";
import { drive, openLoop, quantile, startShedServer } from "../test/support/shed-load.mjs";

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const SECONDS = env("BENCH_SECONDS", 8);
const FACTOR = env("BENCH_FACTOR", 2.5);
const TIMEOUT = env("BENCH_TIMEOUT", 2);
const CRITICAL = env("BENCH_CRITICAL", 0.2);
const ROUNDS = env("BENCH_ROUNDS", 8);
const OVERLOAD_ROUNDS = env("BENCH_OVERLOAD_ROUNDS", 3);
const REQUESTS = env("BENCH_REQUESTS", 4000);
const PARTS = (process.env.BENCH_PARTS ?? "overload,overhead").split(",");
const ONLY = process.env.BENCH_VARIANTS?.split(",");
const TRACE = process.env.BENCH_TRACE === "1";
// Pool-bound on purpose: on a shared, loaded machine a CPU-bound server's capacity is whatever
// the other processes leave it; the pool's is fixed.
const POOL = { slots: env("BENCH_SLOTS", 4), holdMs: env("BENCH_HOLD_MS", 40), burnMs: env("BENCH_BURN_MS", 1) };

const round = (x, digits = 1) => Number(x.toFixed(digits));

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

/**
 * The pool's unloaded latencies (4 connections: full, no queue), its capacity (8: a queue of one
 * a slot, so no slot waits for a client's turnaround), and its unloaded p99 through the
 * overload runs' own client (the open loop at half the capacity: no queue forms, and the
 * client's own cost and stalls are the same as in the runs it is compared with).
 */
async function calibrate(seconds) {
  const base = await startShedServer({ ...POOL, mode: "none" });
  await drive(`${base.url}/work`, { connections: POOL.slots, duration: 1 }); // warm-up
  const calm = await drive(`${base.url}/work`, { connections: POOL.slots, duration: seconds });
  const full = await drive(`${base.url}/work`, { connections: POOL.slots * 2, duration: seconds });
  const capacity = full.ok.length / seconds;
  const open = await openLoop(`${base.url}/work`, { rate: capacity / 2, seconds, timeoutMs: TIMEOUT * 1000 });
  await base.stop();
  return { capacity, p50: quantile(calm.ok, 0.5), p99: quantile(calm.ok, 0.99), openP99: quantile(open.ok, 0.99) };
}

const median = (values) => quantile(values, 0.5);

/**
 * Where the slowest 1% of a run's 2xx answers spent their time: queued for a slot in the pool
 * (x-wait), holding it (x-hold), and outside the handler (the client's latency less both: the
 * event loops of both processes, the loopback, loadShed itself), with when they were sent, and
 * the server's event-loop stalls over 20 ms.
 */
function tailOf(split, stats) {
  if (split.length === 0) return "no 2xx";
  const p99 = quantile(
    split.map((x) => x.ms),
    0.99,
  );
  const tail = split.filter((x) => x.ms >= p99);
  const med = (f) => round(median(tail.map(f)));
  const at = tail.map((x) => (x.at / 1000).toFixed(1)).join(",");
  const stalls = stats.stalls ?? [];
  return (
    `tail (${tail.length} answers ≥ p99): wait ${med((x) => x.wait)} ms, hold ${med((x) => x.hold)} ms, ` +
    `outside ${med((x) => x.ms - x.wait - x.hold)} ms (median); sent at s ${at}; ` +
    `all answers' median wait ${round(median(split.map((x) => x.wait)))} ms; ` +
    `server stalls > 20 ms: ${stalls.length} (max ${stalls.length === 0 ? 0 : Math.max(...stalls)} ms, sum ${stalls.reduce((a, b) => a + b, 0)} ms)`
  );
}

async function overload() {
  console.log(`load average ${loadAverage()}`);
  const first = await calibrate(SECONDS);
  console.log(
    `capacity ${round(first.capacity)} req/s, unloaded p50 ${round(first.p50)} ms p99 ${round(first.p99)} ms; ` +
      `offered ${FACTOR}× each round's capacity (open loop, ${round(100 * CRITICAL)}% critical), client timeout ${TIMEOUT} s, ` +
      `${SECONDS} s a run, ${OVERLOAD_ROUNDS} rounds`,
  );
  const fixed = POOL.slots * 2;
  const reserve = { 0: 0.75 };
  const variants = Object.entries({
    "no shedding": { mode: "none" },
    [`loadShed({ limit: ${fixed} })`]: { mode: "fixed", shed: { limit: fixed } },
    'loadShed({ limit: "adaptive" })': { mode: "adaptive", shed: {} },
    [`loadShed({ limit: ${fixed}, reserve })`]: { mode: "fixed", shed: { limit: fixed, reserve } },
    'loadShed({ limit: "adaptive", reserve })': { mode: "adaptive", shed: { reserve } },
    "@fastify/under-pressure": { mode: "under-pressure" },
  }).filter(([name]) => ONLY === undefined || ONLY.some((part) => name.includes(part)));
  const runs = Object.fromEntries(variants.map(([name]) => [name, []]));
  const unloadedP99s = [];
  const openP99s = [];
  for (let r = 0; r < OVERLOAD_ROUNDS; r++) {
    // Each round re-measures the pool (the machine's other work moves it) and rotates the order.
    const calm = r === 0 ? first : await calibrate(SECONDS);
    unloadedP99s.push(calm.p99);
    openP99s.push(calm.openP99);
    // The offered load follows the round's own capacity: at a fixed rate, a round whose capacity
    // the machine halved was driven at 5×, its critical share alone as much as the pool serves.
    const rate = Math.round(calm.capacity * FACTOR);
    const criticalRate = rate * CRITICAL;
    console.log(
      `round ${r + 1}: capacity ${round(calm.capacity)} req/s, unloaded p99 ${round(calm.p99)} ms (open loop at half capacity ${round(calm.openP99)} ms), offered ${rate} req/s, load average ${loadAverage()}`,
    );
    for (let i = 0; i < variants.length; i++) {
      const [name, config] = variants[(i + r) % variants.length];
      const server = await startShedServer({ ...POOL, ...config });
      const url = `${server.url}/work`;
      // The unloaded load for a second first, as the calibration's server gets: a fresh process
      // compiles its code and opens its sockets in its first answers (the slowest 1% of the
      // runs without it were sent in their first 0.3 s, 250–500 ms outside the handler), and a
      // service meets a flood already running.
      await drive(url, { connections: POOL.slots, duration: 1 });
      const options = { seconds: SECONDS, timeoutMs: TIMEOUT * 1000 };
      const [flood, critical] = await Promise.all([
        openLoop(url, { ...options, rate: rate - criticalRate }),
        openLoop(url, { ...options, rate: criticalRate, headers: { "x-priority": "0" } }),
      ]);
      const stats = await server.stats();
      await server.stop();
      const ok = [...flood.ok, ...critical.ok];
      const goodput = ok.length / SECONDS;
      const run = {
        goodput: (100 * goodput) / calm.capacity,
        success: (100 * ok.length) / Math.max(1, flood.sent + critical.sent),
        p50: quantile(ok, 0.5),
        p99: quantile(ok, 0.99),
        p99Ratio: quantile(ok, 0.99) / calm.p99,
        openRatio: quantile(ok, 0.99) / calm.openP99,
        critical: (100 * critical.ok.length) / Math.max(1, critical.sent),
        shed: (flood.statuses[503] ?? 0) + (critical.statuses[503] ?? 0),
        timeouts: flood.timeouts + critical.timeouts,
        limits: stats.limits.slice(10).filter((x) => x !== undefined),
        tail: tailOf([...flood.split, ...critical.split], stats),
      };
      runs[name].push(run);
      console.log(
        `  ${name}: goodput ${round(run.goodput)}%, p99 ${round(run.p99)} ms (${round(run.p99Ratio, 2)}×, ${round(run.openRatio, 2)}× the open loop's), critical ${round(run.critical, 2)}%, load ${loadavg()[0].toFixed(1)}`,
      );
      if (TRACE) console.log(`    ${run.tail}`);
      if (TRACE && stats.criticalShed?.length > 0)
        console.log(`    critical shed: ${JSON.stringify(stats.criticalShed)}`);
      if (TRACE && stats.limits.length > 0) {
        console.log(`    limit every 100 ms: ${stats.limits.join(" ")}`);
        console.log(`    in flight every 100 ms: ${stats.inFlight.join(" ")}`);
      }
    }
  }
  const rows = variants.map(([name]) => {
    const list = runs[name];
    const of = (key) => list.map((run) => run[key]);
    const limits = list.flatMap((run) => run.limits);
    return {
      variant: name,
      "goodput %cap": round(median(of("goodput"))),
      "2xx %": round(median(of("success"))),
      "p50 ms": round(median(of("p50"))),
      "p99 ms": round(median(of("p99"))),
      "p99/unloaded": round(median(of("p99Ratio")), 2),
      "p99/unl. range": `${round(Math.min(...of("p99Ratio")), 2)}–${round(Math.max(...of("p99Ratio")), 2)}`,
      // One stall in a round's short calibration moves that round's ratio by itself (an
      // unloaded p99 of 500 ms beside 90 ms in the next round): medians over the rounds on both sides.
      "med. p99/med. unl.": round(median(of("p99")) / median(unloadedP99s), 2),
      "p99/open-loop unl. range": `${round(Math.min(...of("openRatio")), 2)}–${round(Math.max(...of("openRatio")), 2)}`,
      "critical 2xx %": round(median(of("critical")), 2),
      "critical min %": round(Math.min(...of("critical")), 2),
      503: Math.round(median(of("shed"))),
      timeouts: Math.round(median(of("timeouts"))),
      limit: limits.length === 0 ? "" : `${median(limits)} (${Math.min(...limits)}–${Math.max(...limits)})`,
    };
  });
  console.log(
    `medians over ${OVERLOAD_ROUNDS} rounds (goodput and p99 against each round's own capacity and unloaded p99; ` +
      `"med. p99/med. unl.": the median p99 over the median unloaded p99, ${unloadedP99s.map((x) => round(x)).join(" / ")} ms):`,
  );
  console.table(rows);
  console.log(`load average ${loadAverage()}`);
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

// Benchmark of `sluice serve` over loopback with autocannon: requests/s and latency for single
// checks and batches of 100 through the JSON API, and for forward-auth (the GET reverse proxies
// send), on the in-process store and on Redis (127.0.0.1:6379, if it answers). Beside them,
// Envoy's gRPC ShouldRateLimit (one descriptor, and five) against the JSON API doing the same
// checks (one, and a batch of five): the server's own CPU per check (process.cpuUsage() in the
// server, asked over IPC, see cpu-probe.mjs) over a fixed number of calls each, 32 in flight,
// rounds interleaved, median of 3; the ratio is the gRPC API's cost relative to JSON (target:
// within 1.5x). Two runs per JSON case: 32 connections for throughput, 1 connection for latency
// (no queueing, so p99 is the service's own cost). For Redis the store's own p99 (RedisStore.check
// awaited one at a time from this process) is measured too, so "added by the service" can be read.
//
// Run: npm run build && node bench/serve.mjs
// Env: BENCH_SECONDS per run (default 3), BENCH_REDIS (default redis://127.0.0.1:6379; "off" to skip),
//      BENCH_GRPC_CALLS per gRPC/JSON cost round (default 20000), BENCH_GRPC_ONLY=1 for that table alone
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { grpcCalls, jsonCalls, rlsClient, serverCpuUs } from "./grpc-load.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const REDIS = process.env.BENCH_REDIS ?? "redis://127.0.0.1:6379";
const GRPC_CALLS = Number(process.env.BENCH_GRPC_CALLS ?? 20_000);
/** BENCH_GRPC_ONLY=1: only the gRPC vs JSON cost table. */
const GRPC_ONLY = process.env.BENCH_GRPC_ONLY === "1";
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-"));
const config = join(dir, "rules.yaml");
// A limit never reached: every check is counted and admitted, the steady state of a healthy API.
writeFileSync(config, "rules:\n  api: { algorithm: fixed-window, limit: 1000000000, windowMs: 1m }\n");
const envoyConfig = join(dir, "envoy.yaml");
writeFileSync(
  envoyConfig,
  "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1000000000 }\n",
);

function start(extra) {
  const child = spawn(
    process.execPath,
    [
      "--import",
      join(ROOT, "bench/cpu-probe.mjs"),
      join(ROOT, "dist/cli/main.js"),
      "serve",
      "--config",
      config,
      "--port",
      "0",
      "--max-body",
      "1mb",
      "--grpc-port",
      "0",
      "--envoy-config",
      envoyConfig,
      ...extra,
    ],
    {
      stdio: ["ignore", "pipe", "inherit", "ipc"],
    },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)[\s\S]*envoy grpc\s+(\S+)/.exec(out);
      if (m) resolve({ url: m[1], grpc: m[2], child });
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

const single = JSON.stringify({ rule: "api", key: "bench" });
const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ rule: "api", key: `bench-${i}` })));

async function cannon(url, body, connections, overallRate) {
  const r = await autocannon({
    ...(overallRate === undefined ? {} : { overallRate }),
    url: `${url}/v1/check`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections,
    duration: SECONDS,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99 };
}

// --- forward-auth: the same check as a GET answered by status and headers (one per request).
async function forwardAuthCannon(url, connections) {
  const r = await autocannon({
    url: `${url}/v1/forward-auth?rule=api&key=bench`,
    method: "GET",
    connections,
    duration: SECONDS,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99 };
}

/** One table row for forward-auth, measured like the JSON rows (warm-up, 32 connections, 1 connection). */
async function forwardAuthRow(url, mode) {
  await forwardAuthCannon(url, 8);
  const load = await forwardAuthCannon(url, 32);
  const quiet = await forwardAuthCannon(url, 1);
  return {
    mode,
    request: "forward-auth",
    "req/s (32 conn)": load.rps,
    "checks/s": load.rps,
    "p99 ms (32 conn)": load.p99,
    "p50 ms (1 conn)": quiet.p50,
    "p99 ms (1 conn)": quiet.p99,
  };
}

/** The server's CPU time in ms (utime + stime from /proc, Linux; 100 ticks a second). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Server CPU per request, forward-auth vs a single JSON check, median of 3 interleaved rounds of
 * 20,000 requests each: steadier than req/s on a shared machine.
 */
async function forwardAuthCpu(url, pid, mode) {
  const json = {
    url: `${url}/v1/check`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: single,
  };
  const fa = { url: `${url}/v1/forward-auth?rule=api&key=bench`, method: "GET" };
  const per = { json: [], fa: [] };
  for (let round = 0; round < 3; round++) {
    for (const [name, options] of [
      ["json", json],
      ["fa", fa],
    ]) {
      const before = cpuMs(pid);
      const r = await autocannon({ ...options, connections: 8, amount: 20_000 });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
      per[name].push(((cpuMs(pid) - before) * 1000) / 20_000);
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[1];
  const jsonUs = median(per.json);
  const faUs = median(per.fa);
  return {
    mode,
    "JSON single: server CPU µs/request": Number(jsonUs.toFixed(1)),
    "forward-auth: server CPU µs/request": Number(faUs.toFixed(1)),
    "forward-auth ÷ JSON": Number((faUs / jsonUs).toFixed(2)),
  };
}
const cpuRows = [];
// --- end forward-auth

async function storeP99(url) {
  const { Redis } = await import("ioredis");
  const { RedisStore } = await import("../dist/stores/redis/index.js");
  const { createLimiter } = await import("../dist/index.js");
  const client = new Redis(url);
  const limiter = createLimiter(
    { algorithm: "fixed-window", limit: 1_000_000_000, windowMs: 60_000 },
    { store: new RedisStore({ client, prefix: "sluice-bench:" }) },
  );
  const times = [];
  for (let i = 0; i < 3000; i++) {
    const t = performance.now();
    await limiter.tryAcquire("bench");
    times.push(performance.now() - t);
  }
  client.disconnect();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length * 0.5)], p99: times[Math.floor(times.length * 0.99)] };
}

async function redisUp() {
  if (REDIS === "off") return false;
  const { Redis } = await import("ioredis");
  const client = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

const modes = [["in-process", []]];
if (await redisUp()) modes.push(["redis", ["--redis", REDIS, "--prefix", `sluice-bench-${process.pid}:`]]);
else console.log(`(Redis at ${REDIS} not reachable: in-process only)`);

const batch5 = JSON.stringify(Array.from({ length: 5 }, (_, i) => ({ rule: "api", key: `bench-${i}` })));
const rls = (n) => ({
  domain: "bench",
  descriptors: Array.from({ length: n }, (_, i) => ({ entries: [{ key: "user", value: `bench-${i}` }] })),
});

/**
 * Server CPU µs per check of gRPC and of JSON doing the same checks: `GRPC_CALLS` calls each, 32
 * in flight, in 3 interleaved rounds (so background load hits both alike); the median round.
 */
async function grpcVsJson(child, url, client, n, body) {
  const loads = {
    grpc: () => grpcCalls(client, rls(n), 32, GRPC_CALLS),
    json: () => jsonCalls(url, body, 32, GRPC_CALLS),
  };
  for (const load of Object.values(loads)) await load(); // warm-up: JIT, connections
  const per = { grpc: [], json: [] };
  for (let round = 0; round < 3; round++)
    for (const [name, load] of Object.entries(loads)) {
      const before = await serverCpuUs(child);
      await load();
      per[name].push(((await serverCpuUs(child)) - before) / (GRPC_CALLS * n));
    }
  const median = (xs) => [...xs].sort((a, b) => a - b)[1];
  return { grpc: median(per.grpc), json: median(per.json), per };
}

const rows = [];
const envoyRows = [];
for (const [mode, extra] of modes) {
  const { url, grpc, child } = await start(extra);
  try {
    const client = rlsClient(grpc, join(ROOT, "dist/server/envoy/ratelimit.proto"));
    for (const [name, n, body] of [
      ["1 check", 1, single],
      ["5 checks", 5, batch5],
    ]) {
      const cost = await grpcVsJson(child, url, client, n, body);
      envoyRows.push({
        mode,
        request: name,
        "gRPC µs CPU/check": Number(cost.grpc.toFixed(1)),
        "JSON µs CPU/check": Number(cost.json.toFixed(1)),
        "gRPC/JSON cost": Number((cost.grpc / cost.json).toFixed(2)),
        "rounds gRPC | JSON": `${cost.per.grpc.map((x) => x.toFixed(1)).join(" ")} | ${cost.per.json.map((x) => x.toFixed(1)).join(" ")}`,
      });
    }
    client.close();
    if (GRPC_ONLY) continue;
    for (const [name, body] of [
      ["single", single],
      ["batch of 100", batch],
    ]) {
      await cannon(url, body, 8); // warm-up (JIT, connections, script load)
      const load = await cannon(url, body, 32);
      const quiet = await cannon(url, body, 1);
      rows.push({
        mode,
        request: name,
        "req/s (32 conn)": load.rps,
        "checks/s": load.rps * (name === "single" ? 1 : 100),
        "p99 ms (32 conn)": load.p99,
        "p50 ms (1 conn)": quiet.p50,
        "p99 ms (1 conn)": quiet.p99,
      });
    }
    rows.push(await forwardAuthRow(url, mode));
    cpuRows.push(await forwardAuthCpu(url, child.pid, mode));
  } finally {
    child.kill("SIGTERM");
  }
  if (mode === "redis" && !GRPC_ONLY) {
    const s = await storeP99(REDIS);
    rows.push({
      mode: "redis store alone",
      request: "single (awaited)",
      "p50 ms (1 conn)": Number(s.p50.toFixed(3)),
      "p99 ms (1 conn)": Number(s.p99.toFixed(3)),
    });
  }
}
rmSync(dir, { recursive: true, force: true });
if (!GRPC_ONLY) {
  console.table(rows);
  console.table(cpuRows);
}
console.log(
  `Envoy gRPC ShouldRateLimit vs the JSON API (server CPU per check, ${GRPC_CALLS} calls a round, 32 in flight):`,
);
console.table(envoyRows);

// ---- sluice/client: 100 checks from one tick (one batched request) vs 10 single requests ----
// The same in-process service; rounds interleaved so background load hits both alike. Costs:
// wall time per round (median) and the service's CPU per round (from /proc, steadier).
// Env: BENCH_CLIENT_ROUNDS (default 400); BENCH_CLIENT=off skips this section.
if (process.env.BENCH_CLIENT !== "off" && !GRPC_ONLY) {
  const { readFileSync } = await import("node:fs");
  const { request, Agent } = await import("node:http");
  const { createClient } = await import("../dist/client/index.js");
  const ROUNDS = Number(process.env.BENCH_CLIENT_ROUNDS ?? 400);
  const clientDir = mkdtempSync(join(tmpdir(), "sluice-bench-client-"));
  const clientConfig = join(clientDir, "rules.yaml");
  writeFileSync(clientConfig, "rules:\n  api: { algorithm: fixed-window, limit: 1000000000, windowMs: 1m }\n");
  const child = spawn(
    process.execPath,
    [join(ROOT, "dist/cli/main.js"), "serve", "--config", clientConfig, "--port", "0"],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const cpu = () => {
    // utime + stime in clock ticks (100 per second on Linux), fields 14 and 15 of /proc/PID/stat.
    const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // ms
  };
  const client = createClient({ url });
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  const single = (key) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ rule: "api", key });
      const req = request(`${url}/v1/check`, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      });
      req.on("error", reject);
      req.on("response", (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.end(body);
    });
  const cases = {
    "client: 100 checks in one tick (1 request)": () =>
      Promise.all(Array.from({ length: 100 }, (_, i) => client.check("api", `k${i}`))),
    "10 single requests, concurrent (10 kept-alive sockets)": () =>
      Promise.all(Array.from({ length: 10 }, (_, i) => single(`k${i}`))),
    "client: 10 checks one after another (10 requests)": async () => {
      for (let i = 0; i < 10; i++) await client.check("api", `k${i}`);
    },
  };
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const cpuMs = Object.fromEntries(Object.keys(cases).map((k) => [k, 0]));
  for (const run of Object.values(cases)) for (let i = 0; i < 50; i++) await run(); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, run] of Object.entries(cases)) {
      const c0 = cpu();
      const t = performance.now();
      await run();
      times[name].push(performance.now() - t);
      cpuMs[name] += cpu() - c0;
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = median([...times["client: 100 checks in one tick (1 request)"]]);
  const baseCpu = cpuMs["client: 100 checks in one tick (1 request)"];
  const clientRows = Object.keys(cases).map((name) => ({
    case: name,
    "median ms per round": Number(median([...times[name]]).toFixed(3)),
    "÷ batch (time)": Number((median([...times[name]]) / base).toFixed(2)),
    "service CPU ms per round": Number((cpuMs[name] / ROUNDS).toFixed(3)),
    "÷ batch (service CPU)": Number((cpuMs[name] / baseCpu).toFixed(2)),
  }));
  await client.close();
  agent.destroy();
  child.kill("SIGTERM");
  rmSync(clientDir, { recursive: true, force: true });
  console.log("sluice/client batching (in-process store):");
  console.table(clientRows);
}

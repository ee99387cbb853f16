// Redis benchmark: sluice's RedisStore beside rate-limiter-flexible's RateLimiterRedis, same
// ioredis client kind, same Redis, one process: 100k decisions over 10k keys with 64 in flight.
// Reports decisions/s, p50/p99 latency, Redis CPU per decision (INFO cpu), this process's CPU
// per decision (is a contender client-bound?) and bytes per key (MEMORY USAGE sample).
// The machine may be shared and noisy: rounds are interleaved (each round runs every contender,
// in a rotating order) and each figure is the median over rounds; the load average is printed.
// Key prefixes are equally long for every contender, so bytes/key compares like with like.
// Then abusive traffic: 100 keys already over their limit, hammered with DECISIONS checks, on
// a private redis-server started here (so INFO commandstats counts only this run's commands):
// decisions/s, Redis commands per repeated denial and Redis CPU per decision, sluice (deny
// cache on, and off) beside rate-limiter-flexible.
// Run with: npm run build && node bench/redis.mjs
// (REDIS_URL selects the server; default redis://127.0.0.1:6379. BENCH_ROUNDS, default 5.)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";

const URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 100_000);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const run = Math.random().toString(36).slice(2, 8);
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

const admin = new Redis(URL);

// Both contenders get the same client: ioredis with its default options (what a user passes
// in). BENCH_CLIENT=tuned gives sluice's client { enableOfflineQueue: false,
// autoResendUnfulfilledCommands: false } instead, as before.
const TUNED = process.env.BENCH_CLIENT === "tuned";
const sluiceClient = (url) =>
  TUNED ? new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false }) : new Redis(url);
// BENCH_ONLY: comma-separated contender names (rate-limiter-flexible is always kept);
// BENCH_ABUSE=0 skips the abusive-traffic part.
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());

async function redisCpuSeconds() {
  const info = await admin.info("cpu");
  const field = (name) => Number(/^(?:\s*)?/.test(info) && new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1]);
  return field("used_cpu_sys") + field("used_cpu_user");
}

/** Runs DECISIONS checks, IN_FLIGHT at a time, over the keys in a shuffled cycle. */
async function measure(check) {
  const latencies = new Float64Array(DECISIONS);
  let next = 0;
  let allowed = 0;
  const cpu0 = await redisCpuSeconds();
  const own0 = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    while (next < DECISIONS) {
      const i = next++;
      const key = keys[(i * 7919) % KEYS];
      const t0 = performance.now();
      if (await check(key)) allowed++;
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  const own = process.cpuUsage(own0);
  const cpu = (await redisCpuSeconds()) - cpu0;
  latencies.sort();
  return {
    perSecond: DECISIONS / seconds,
    p50: latencies[Math.floor(DECISIONS * 0.5)],
    p99: latencies[Math.floor(DECISIONS * 0.99)],
    cpuUsPerDecision: (cpu / DECISIONS) * 1e6,
    clientUsPerDecision: (own.user + own.system) / DECISIONS,
    allowed,
  };
}

async function bytesPerKey(pattern) {
  const sample = [];
  let cursor = "0";
  do {
    const [next, found] = await admin.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    sample.push(...found);
  } while (cursor !== "0" && sample.length < 500);
  let total = 0;
  for (const key of sample.slice(0, 500)) total += Number(await admin.memory("USAGE", key, "SAMPLES", "0"));
  return { bytes: total / Math.min(sample.length, 500), keys: sample.length };
}

async function cleanup(pattern) {
  let cursor = "0";
  do {
    const [next, found] = await admin.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (found.length > 0) await admin.unlink(...found);
  } while (cursor !== "0");
}

const contenders = [
  {
    name: "sluice fixed-window",
    pattern: `bench-fw-${run}:*`,
    make() {
      const client = sluiceClient(URL);
      const store = new RedisStore({ client, prefix: `bench-fw-${run}:` });
      const limiter = createLimiter({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, { store });
      return {
        ready: () => new Promise((r) => (client.status === "ready" ? r() : client.once("ready", r))),
        check: async (key) => (await limiter.tryAcquire(key)).allowed,
        close: () => store.close().then(() => client.disconnect()),
      };
    },
  },
  {
    name: "sluice gcra",
    pattern: `bench-gc-${run}:*`,
    make() {
      const client = sluiceClient(URL);
      const store = new RedisStore({ client, prefix: `bench-gc-${run}:` });
      const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store });
      return {
        ready: () => new Promise((r) => (client.status === "ready" ? r() : client.once("ready", r))),
        check: async (key) => (await limiter.tryAcquire(key)).allowed,
        close: () => store.close().then(() => client.disconnect()),
      };
    },
  },
  {
    name: "rate-limiter-flexible",
    pattern: `bench-rl-${run}:*`,
    make() {
      const client = new Redis(URL);
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: 100,
        duration: 60,
        keyPrefix: `bench-rl-${run}`,
      });
      return {
        check: (key) =>
          limiter.consume(key, 1).then(
            () => true,
            (rejection) => {
              if (rejection instanceof Error) throw rejection;
              return false;
            },
          ),
        close: () => client.disconnect(),
      };
    },
  },
];

if (ONLY !== undefined) {
  for (let i = contenders.length - 1; i >= 0; i--) {
    const name = contenders[i].name;
    if (name !== "rate-limiter-flexible" && !ONLY.includes(name)) contenders.splice(i, 1);
  }
}

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loadBefore = loadAverage();
const results = new Map(contenders.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < contenders.length; i++) {
    const c = contenders[(i + round) % contenders.length];
    await cleanup(c.pattern);
    const { ready, check, close } = c.make();
    await ready?.();
    await measure(check); // warm-up round fills the keys and the script caches (not counted)
    const r = await measure(check);
    r.memory = await bytesPerKey(c.pattern);
    await close();
    results.get(c.name).push(r);
    await cleanup(c.pattern);
  }
}
const loadAfter = loadAverage();

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const summary = new Map(
  [...results].map(([name, rs]) => [
    name,
    {
      perSecond: median(rs.map((r) => r.perSecond)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpu: median(rs.map((r) => r.cpuUsPerDecision)),
      client: median(rs.map((r) => r.clientUsPerDecision)),
      bytes: median(rs.map((r) => r.memory.bytes)),
      rates: rs.map((r) => Math.round(r.perSecond / 1000)).join(" "),
      // Each round's ratio to rate-limiter-flexible's run in the same round (the rounds interleave).
      ratios: rs.map((r, i) => r.perSecond / results.get("rate-limiter-flexible")[i].perSecond),
      p99Ratios: rs.map((r, i) => r.p99 / results.get("rate-limiter-flexible")[i].p99),
    },
  ]),
);
const base = summary.get("rate-limiter-flexible");
const rows = [...summary].map(([name, r]) => ({
  contender: name,
  "decisions/s": Math.round(r.perSecond),
  "× rlf": (r.perSecond / base.perSecond).toFixed(2),
  "p50 ms": r.p50.toFixed(3),
  "p99 ms": r.p99.toFixed(3),
  "p99 ÷ rlf": (r.p99 / base.p99).toFixed(2),
  "Redis CPU µs/decision": r.cpu.toFixed(2),
  "client CPU µs/decision": r.client.toFixed(2),
  "bytes/key": Math.round(r.bytes),
  "k/s per round": r.rates,
  "min × rlf (paired)": Math.min(...r.ratios).toFixed(2),
  "max p99 ÷ rlf (paired)": Math.max(...r.p99Ratios).toFixed(2),
}));
console.log(
  `Redis benchmark: ${DECISIONS} decisions over ${KEYS} keys, ${IN_FLIGHT} in flight, median of ${ROUNDS} interleaved rounds (${URL})`,
);
console.table(rows);
console.log(
  `load average before: ${loadBefore}; after: ${loadAfter} (${ROUNDS} rounds, ${TUNED ? "tuned" : "default"} ioredis client)`,
);
admin.disconnect();
if (process.env.BENCH_ABUSE === "0") process.exit(0);

// --- Abusive traffic, on a private server -------------------------------------------------
const ABUSERS = 100;
const ABUSE_LIMIT = 10;

function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), "sluice-bench-"));
const port = await freePort();
const privateServer = spawn(
  "redis-server",
  ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
  { stdio: "ignore" },
);
const privateUrl = `redis://127.0.0.1:${port}`;
const privateAdmin = new Redis(privateUrl, { retryStrategy: () => 50 });
privateAdmin.on("error", () => {}); // refused until the server is up
for (let i = 0; i < 100; i++) {
  try {
    await privateAdmin.ping();
    break;
  } catch {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Commands the private server has run (INFO's own calls excluded) and its CPU seconds. */
async function serverCounters() {
  const stats = await privateAdmin.info("commandstats");
  let calls = 0;
  for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (m[1] !== "info") calls += Number(m[2]);
  const cpu = await privateAdmin.info("cpu");
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)?.[1]);
  return { calls, cpu: field("used_cpu_sys") + field("used_cpu_user") };
}

const abusers = Array.from({ length: ABUSERS }, (_, i) => `abuser:${i}`);
const abuseContenders = [
  {
    name: "sluice gcra (deny cache)",
    make(prefix) {
      const client = sluiceClient(privateUrl);
      const store = new RedisStore({ client, prefix });
      const limiter = createLimiter({ algorithm: "gcra", limit: ABUSE_LIMIT, periodMs: 60_000 }, { store });
      return {
        ready: () => new Promise((r) => (client.status === "ready" ? r() : client.once("ready", r))),
        check: async (key) => (await limiter.tryAcquire(key)).allowed,
        close: async () => {
          await store.close();
          client.disconnect();
        },
      };
    },
  },
  {
    name: "sluice gcra (denyCache: false)",
    make(prefix) {
      const client = sluiceClient(privateUrl);
      const store = new RedisStore({ client, prefix, denyCache: false });
      const limiter = createLimiter({ algorithm: "gcra", limit: ABUSE_LIMIT, periodMs: 60_000 }, { store });
      return {
        ready: () => new Promise((r) => (client.status === "ready" ? r() : client.once("ready", r))),
        check: async (key) => (await limiter.tryAcquire(key)).allowed,
        close: async () => client.disconnect(),
      };
    },
  },
  {
    name: "rate-limiter-flexible",
    make(prefix) {
      const client = new Redis(privateUrl);
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: ABUSE_LIMIT,
        duration: 60,
        keyPrefix: prefix,
      });
      return {
        ready: () => client.ping(),
        check: (key) =>
          limiter.consume(key, 1).then(
            () => true,
            (rejection) => {
              if (rejection instanceof Error) throw rejection;
              return false;
            },
          ),
        close: async () => client.disconnect(),
      };
    },
  },
];

/** DECISIONS checks over the abusers, IN_FLIGHT at a time. */
async function abuse(check) {
  let next = 0;
  let allowed = 0;
  const before = await serverCounters();
  const started = performance.now();
  const worker = async () => {
    while (next < DECISIONS) {
      const i = next++;
      if (await check(abusers[i % ABUSERS])) allowed++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  const after = await serverCounters();
  return {
    perSecond: DECISIONS / seconds,
    commandsPerDenial: (after.calls - before.calls - 2) / (DECISIONS - allowed),
    cpuUsPerDecision: ((after.cpu - before.cpu) / DECISIONS) * 1e6,
    allowed,
  };
}

const abuseResults = new Map(abuseContenders.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < abuseContenders.length; i++) {
    const c = abuseContenders[(i + round) % abuseContenders.length];
    const prefix = `abuse-${run}-${round}-${i}:`;
    const { ready, check, close } = c.make(prefix);
    await ready();
    // Every abuser spends its limit first, then keeps coming back.
    for (let n = 0; n < ABUSE_LIMIT + 2; n++) await Promise.all(abusers.map((k) => check(k)));
    abuseResults.get(c.name).push(await abuse(check));
    await close();
  }
}
const abuseBase = median(abuseResults.get("rate-limiter-flexible").map((r) => r.perSecond));
console.log(
  `\nAbusive traffic: ${DECISIONS} checks over ${ABUSERS} keys already over their limit (${ABUSE_LIMIT}/min), ${IN_FLIGHT} in flight, median of ${ROUNDS} rounds (private redis-server)`,
);
console.table(
  [...abuseResults].map(([name, rs]) => ({
    contender: name,
    "decisions/s": Math.round(median(rs.map((r) => r.perSecond))),
    "× rlf": (median(rs.map((r) => r.perSecond)) / abuseBase).toFixed(2),
    "Redis commands/denial": median(rs.map((r) => r.commandsPerDenial)).toFixed(4),
    "Redis CPU µs/decision": median(rs.map((r) => r.cpuUsPerDecision)).toFixed(2),
    allowed: rs.map((r) => r.allowed).join(" "),
  })),
);
privateAdmin.disconnect();
privateServer.kill("SIGKILL");
rmSync(dir, { recursive: true, force: true });

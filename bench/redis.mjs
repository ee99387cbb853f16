// Redis benchmark: sluice's RedisStore beside rate-limiter-flexible's RateLimiterRedis, same
// ioredis client kind, same Redis, one process: 100k decisions over 10k keys with 64 in flight.
// Reports decisions/s, p50/p99 latency, Redis CPU per decision (INFO cpu), this process's CPU
// per decision (is a contender client-bound?) and bytes per key (MEMORY USAGE sample).
// The machine may be shared and noisy: rounds are interleaved (each round runs every contender,
// in a rotating order) and each figure is the median over rounds; the load average is printed.
// Key prefixes are equally long for every contender, so bytes/key compares like with like.
// Run with: npm run build && node bench/redis.mjs
// (REDIS_URL selects the server; default redis://127.0.0.1:6379. BENCH_ROUNDS, default 5.)
import { readFileSync } from "node:fs";
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
      const client = new Redis(URL);
      const store = new RedisStore({ client, prefix: `bench-fw-${run}:` });
      const limiter = createLimiter({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, { store });
      return { check: async (key) => (await limiter.tryAcquire(key)).allowed, close: () => client.disconnect() };
    },
  },
  {
    name: "sluice gcra",
    pattern: `bench-gc-${run}:*`,
    make() {
      const client = new Redis(URL);
      const store = new RedisStore({ client, prefix: `bench-gc-${run}:` });
      const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store });
      return { check: async (key) => (await limiter.tryAcquire(key)).allowed, close: () => client.disconnect() };
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

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loadBefore = loadAverage();
const results = new Map(contenders.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < contenders.length; i++) {
    const c = contenders[(i + round) % contenders.length];
    await cleanup(c.pattern);
    const { check, close } = c.make();
    await measure(check); // warm-up round fills the keys and the script caches (not counted)
    const r = await measure(check);
    r.memory = await bytesPerKey(c.pattern);
    close();
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
}));
console.log(
  `Redis benchmark: ${DECISIONS} decisions over ${KEYS} keys, ${IN_FLIGHT} in flight, median of ${ROUNDS} interleaved rounds (${URL})`,
);
console.table(rows);
console.log(`load average before: ${loadBefore}; after: ${loadAfter} (${ROUNDS} rounds)`);
admin.disconnect();

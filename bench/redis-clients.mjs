// The tail across the client configurations users write: sluice gcra beside rate-limiter-flexible
// (RateLimiterRedis, 100 per minute), each pair on the same kind of client with the same options:
// ioredis with default options, ioredis with enableAutoPipelining, node-redis (createClient),
// iovalkey. 64 in flight over 10k keys on a private redis-server, in BENCH_ROUNDS rounds that
// run every contender for BENCH_SLICE_MS in a rotating order (see bench/redis.mjs for why slices
// are bounded by time). Per configuration: decisions/s, p50, p99 and their ratios to
// rate-limiter-flexible's on that configuration, pooled over every slice, with the min / median /
// max of the per-round ratios (the min: the worst round), the ratio of CPU per decision (Redis and
// this process: the throughput ratio where both are CPU-bound, which stalls do not move) pooled
// and per round, and the load average.
// Run with: npm run build && node bench/redis-clients.mjs
// (BENCH_ROUNDS, default 12; BENCH_SLICE_MS, default 150; BENCH_CLIENTS=a,b keeps those configurations.)
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createClient } from "redis";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";
import { loadAverage, privateRedis, quantile, ready, serverCpuSeconds, spread, timedSlice } from "./redis-kit.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const SLICE_MS = Number(process.env.BENCH_SLICE_MS ?? 150);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const run = Math.random().toString(36).slice(2, 8);
// The user's own clients: warnings about their options are expected here.
process.removeAllListeners("warning");

let iovalkey;
try {
  iovalkey = (await import("iovalkey")).Redis;
} catch {
  console.warn("iovalkey is not installed: its configuration is left out");
}

const server = await privateRedis();
const url = server.url;

/** One time-bounded slice of `c`, with Redis's and this process's CPU around it (µs per decision as `cpu`). */
async function slice(c, start) {
  const server0 = await serverCpuSeconds(server.admin);
  const own0 = process.cpuUsage();
  const out = await timedSlice(c.check, keys, start, SLICE_MS, IN_FLIGHT);
  const own = process.cpuUsage(own0);
  const redis = (await serverCpuSeconds(server.admin)) - server0;
  return { ...out, cpuUsec: redis * 1e6 + own.user + own.system };
}

/** Client configurations: each makes a connected client `{ client, close, rlf }` (rlf: RateLimiterRedis options). */
const CONFIGS = {
  "ioredis (defaults)": async () => {
    const client = new Redis(url);
    await ready(client);
    return { client, close: () => client.disconnect(), rlf: {} };
  },
  "ioredis (enableAutoPipelining)": async () => {
    const client = new Redis(url, { enableAutoPipelining: true });
    await ready(client);
    return { client, close: () => client.disconnect(), rlf: {} };
  },
  "node-redis": async () => {
    const client = createClient({ url });
    await client.connect();
    return { client, close: () => client.close?.() ?? client.quit(), rlf: { useRedisPackage: true } };
  },
  ...(iovalkey === undefined
    ? {}
    : {
        iovalkey: async () => {
          const client = new iovalkey(url);
          await ready(client);
          return { client, close: () => client.disconnect(), rlf: {} };
        },
      }),
};
const only = process.env.BENCH_CLIENTS?.split(",").map((s) => s.trim());

const contenders = [];
for (const [config, make] of Object.entries(CONFIGS)) {
  if (only !== undefined && !only.includes(config)) continue;
  const tag = contenders.length;
  {
    const { client, close } = await make();
    const store = new RedisStore({ client, prefix: `cl-s${tag}-${run}:` });
    const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store });
    contenders.push({
      config,
      who: "sluice gcra",
      check: (key) => limiter.tryAcquire(key),
      close: () => store.close().then(close),
    });
  }
  {
    const { client, close, rlf } = await make();
    const limiter = new RateLimiterRedis({
      storeClient: client,
      points: 100,
      duration: 60,
      keyPrefix: `cl-r${tag}-${run}`,
      ...rlf,
    });
    contenders.push({
      config,
      who: "rate-limiter-flexible",
      check: (key) =>
        limiter.consume(key, 1).catch((rejection) => {
          if (rejection instanceof Error) throw rejection;
        }),
      close,
    });
  }
}

const loadBefore = loadAverage();
for (const c of contenders) {
  c.slices = [];
  await timedSlice(c.check, keys, 0, 300, IN_FLIGHT); // warm-up
}
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < contenders.length; i++) {
    const c = contenders[(i + round) % contenders.length];
    c.slices.push(
      await slice(
        c,
        c.slices.reduce((a, s) => a + s.n, 0),
      ),
    );
  }
}
const loadAfter = loadAverage();

for (const c of contenders) {
  const all = c.slices.flatMap((s) => s.latencies).sort((a, b) => a - b);
  c.rate = all.length / c.slices.reduce((a, s) => a + s.seconds, 0);
  c.cpu = c.slices.reduce((a, s) => a + s.cpuUsec, 0) / all.length;
  c.p50 = quantile(all, 0.5);
  c.p99 = quantile(all, 0.99);
  c.perRound = c.slices.map((s) => ({
    rate: s.n / s.seconds,
    cpu: s.cpuUsec / s.n,
    p99: quantile(
      [...s.latencies].sort((a, b) => a - b),
      0.99,
    ),
  }));
  await c.close();
}
console.log(
  `Client configurations: sluice gcra beside rate-limiter-flexible on the same client, ${ROUNDS} rounds of ${SLICE_MS} ms slices, ${KEYS} keys, ${IN_FLIGHT} in flight (private redis-server)`,
);
const rows = [];
for (const c of contenders) {
  if (c.who !== "sluice gcra") continue;
  const base = contenders.find((b) => b.config === c.config && b !== c);
  rows.push({
    client: c.config,
    "sluice decisions/s": Math.round(c.rate),
    "rlf decisions/s": Math.round(base.rate),
    "× rlf": (c.rate / base.rate).toFixed(2),
    "× rlf per round (min / median / max)": spread(c.perRound.map((s, i) => s.rate / base.perRound[i].rate)),
    "sluice p50 / p99 ms": `${c.p50.toFixed(3)} / ${c.p99.toFixed(3)}`,
    "rlf p50 / p99 ms": `${base.p50.toFixed(3)} / ${base.p99.toFixed(3)}`,
    "p99 ÷ rlf": (c.p99 / base.p99).toFixed(2),
    "p99 ÷ rlf per round (min / median / max)": spread(c.perRound.map((s, i) => s.p99 / base.perRound[i].p99)),
    // CPU per decision (Redis + this process): the throughput ratio where both are CPU-bound.
    "rlf's CPU ÷ this": (base.cpu / c.cpu).toFixed(2),
    "CPU ratio per round (min / median / max)": spread(c.perRound.map((s, i) => base.perRound[i].cpu / s.cpu)),
  });
}
console.table(rows);
console.log(`load average before: ${loadBefore}; after: ${loadAfter}`);
server.stop();

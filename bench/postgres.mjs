// PostgreSQL benchmark: sluice's PostgresStore beside rate-limiter-flexible's RateLimiterPostgres,
// each on its own pg Pool of the same size, same server, one process: DECISIONS decisions over
// KEYS keys with IN_FLIGHT in flight (limit 100 per minute per key: nearly all allowed, so both
// write on nearly every call), then the same on one hot key (nearly all denied after its first
// 100). Reports decisions/s and p50/p99 latency per contender. The machine may be shared and
// noisy: rounds are interleaved (each round runs every contender, in a rotating order) and each
// figure is the median over rounds; the load average is printed.
// Run with: npm run build && node bench/postgres.mjs
// (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test; BENCH_DECISIONS default 20,000;
// BENCH_ROUNDS default 3; POOL default 10.)
import { loadavg } from "node:os";
import pg from "pg";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import { createLimiter } from "../dist/index.js";
import { PostgresStore } from "../dist/stores/postgres/index.js";

const URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = Number(process.env.POOL ?? 10);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const run = `${process.pid}`;

/** Runs DECISIONS checks, IN_FLIGHT at a time, over `keys` keys. */
async function measure(check, keys, label) {
  const latencies = new Float64Array(DECISIONS);
  let next = 0;
  let allowed = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < DECISIONS) {
      const i = next++;
      const key = `${label}:${(i * 7919) % keys}`;
      const t0 = performance.now();
      if (await check(key)) allowed++;
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  return {
    perSecond: DECISIONS / seconds,
    p50: latencies[Math.floor(DECISIONS * 0.5)],
    p99: latencies[Math.floor(DECISIONS * 0.99)],
    allowed,
  };
}

const pools = [];
const newPool = () => {
  const pool = new pg.Pool({ connectionString: URL, max: POOL });
  pools.push(pool);
  return pool;
};

const sluiceStore = new PostgresStore({ pool: newPool(), table: `bench_sluice_${run}` });
await sluiceStore.migrate();
const sluice = createLimiter(
  { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
  { store: sluiceStore, name: "b" },
);
const rlfPool = newPool();
const rlf = await new Promise((resolve, reject) => {
  const limiter = new RateLimiterPostgres(
    { storeClient: rlfPool, storeType: "pool", tableName: `bench_rlf_${run}`, points: 100, duration: 60 },
    (error) => (error ? reject(error) : resolve(limiter)),
  );
});

const contenders = {
  "sluice PostgresStore": async (key) => (await sluice.tryAcquire(key)).allowed,
  "rate-limiter-flexible RateLimiterPostgres": (key) =>
    rlf.consume(key).then(
      () => true,
      (rejected) => {
        if (rejected instanceof Error) throw rejected;
        return false;
      },
    ),
};

const results = {};
for (const [scenario, keys] of [
  [`${KEYS} keys`, KEYS],
  ["one hot key", 1],
]) {
  const names = Object.keys(contenders);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length];
      const r = await measure(contenders[name], keys, `${scenario}-r${round}`);
      ((results[scenario] ??= {})[name] ??= []).push(r);
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `PostgresStore vs RateLimiterPostgres: ${DECISIONS} decisions x ${ROUNDS} rounds per scenario, ${IN_FLIGHT} in flight, pool of ${POOL} each; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
for (const [scenario, byName] of Object.entries(results)) {
  const rows = {};
  for (const [name, rs] of Object.entries(byName)) {
    rows[name] = {
      "decisions/s": Math.round(median(rs.map((r) => r.perSecond))),
      "p50 ms": median(rs.map((r) => r.p50)).toFixed(2),
      "p99 ms": median(rs.map((r) => r.p99)).toFixed(2),
      allowed: Math.round(median(rs.map((r) => r.allowed))),
    };
  }
  const [a, b] = Object.values(rows);
  console.log(`\n${scenario}: sluice/rlf throughput ${(a["decisions/s"] / b["decisions/s"]).toFixed(2)}x`);
  console.table(rows);
}
await sluiceStore.close();
for (const pool of pools) {
  await pool.query(`DROP TABLE IF EXISTS "bench_sluice_${run}"`).catch(() => undefined);
  await pool.query(`DROP TABLE IF EXISTS "bench_rlf_${run}"`).catch(() => undefined);
}
for (const pool of pools) await pool.end();

// The Redis lease round trip (issue 33, "Speed"): a concurrency lease's acquire and release
// beside a rate check on the same store, on a private redis-server started here (so INFO
// commandstats counts only this run's commands).
// 1. Round trips: SEQUENTIAL operations one at a time (nothing to batch), Redis commands per
//    operation: a rate check (gcra, sliding-log), a lease acquire (tryAcquire), its release.
// 2. Speed: OPS operations over 10k keys with 64 in flight: rate checks, and lease pairs
//    (acquire, then release at once); per-operation p50/p99 and operations/s, median of
//    BENCH_ROUNDS rounds (interleaved). Compare as ratios only: the machine may be shared.
// Run with: npm run build && node bench/lease.mjs   (BENCH_ROUNDS, default 3; BENCH_OPS, default 40000)
import { loadavg } from "node:os";
import { Redis } from "ioredis";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";
import { commandStats, median, privateRedis, ready } from "./redis-kit.mjs";

const SEQUENTIAL = 2000;
const OPS = Number(process.env.BENCH_OPS ?? 40_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

const server = await privateRedis();
const { url, admin } = server;

/** Commands the server has run, by name (INFO's own calls excluded). */
async function commands() {
  const out = {};
  for (const [name, { calls }] of Object.entries(await commandStats(admin))) out[name] = calls;
  return out;
}
const total = (c) => Object.values(c).reduce((a, b) => a + b, 0);

/** Commands this process sent, by name: a round trip is one of them (none is pipelined here). */
const sent = {};
/** A limiter on its own client and store. */
function setup(spec, prefix) {
  const client = new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    sent[command.name] = (sent[command.name] ?? 0) + 1;
    return send(command, stream);
  };
  const store = new RedisStore({ client, prefix });
  const limiter = createLimiter(spec, { store, name: "bench" });
  return {
    limiter,
    ready: () => ready(client),
    close: () => store.close().then(() => client.disconnect()),
  };
}

const RATE = { algorithm: "gcra", limit: 1_000_000, periodMs: 60_000 };
const LOG = { algorithm: "sliding-log", limit: 1_000, windowMs: 60_000 };
const LEASE = { algorithm: "concurrency", limit: 10, leaseMs: 60_000 };

// --- 1. Round trips -----------------------------------------------------------------------
const trips = [];
/** Runs `op` SEQUENTIAL times, one at a time, after a warm-up; Redis commands per operation. */
async function perOp(name, op) {
  for (let i = 0; i < 50; i++) await op(i); // scripts loaded, connections open
  const before = await commands();
  const sentBefore = { ...sent };
  for (let i = 0; i < SEQUENTIAL; i++) await op(i);
  const after = await commands();
  const per = (a, b) => {
    const out = {};
    for (const [k, v] of Object.entries(a)) if (v - (b[k] ?? 0) > 0) out[k] = (v - (b[k] ?? 0)) / SEQUENTIAL;
    return out;
  };
  const sentPerOp = per(sent, sentBefore);
  trips.push({
    operation: name,
    "round trips/op": total(sentPerOp),
    sent: JSON.stringify(sentPerOp),
    "Redis commands/op, the script's own included": JSON.stringify(per(after, before)),
  });
}
{
  const rate = setup(RATE, "rt-rate:");
  const log = setup(LOG, "rt-log:");
  const lease = setup(LEASE, "rt-lease:");
  await Promise.all([rate.ready(), log.ready(), lease.ready()]);
  await perOp("rate check (gcra)", (i) => rate.limiter.tryAcquire(keys[i % KEYS]));
  await perOp("rate check (sliding-log)", (i) => log.limiter.tryAcquire(keys[i % KEYS]));
  const held = [];
  await perOp("lease acquire (tryAcquire)", async (i) => {
    held.push(await lease.limiter.tryAcquire(keys[i % KEYS]));
  });
  let next = 0;
  await perOp("lease release (decision.release())", () => held[next++].release());
  await Promise.all([rate.close(), log.close(), lease.close()]);
}

// --- 2. Speed -----------------------------------------------------------------------------
/** OPS operations, IN_FLIGHT at a time; `one(key)` returns how many timed operations it ran. */
async function measure(one) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < OPS) {
      const i = next++;
      await one(keys[(i * 7919) % KEYS], latencies);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    opsPerSecond: latencies.length / seconds,
    p50: latencies[Math.floor(latencies.length * 0.5)],
    p99: latencies[Math.floor(latencies.length * 0.99)],
  };
}
const timed = async (latencies, call) => {
  const t0 = performance.now();
  const d = await call();
  latencies.push(performance.now() - t0);
  return d;
};
const contenders = {
  "rate check (gcra)": (l) => (key, lat) => timed(lat, () => l.tryAcquire(key)),
  "lease acquire + release": (l) => async (key, lat) => {
    const d = await timed(lat, () => l.tryAcquire(key));
    if (d.allowed) await timed(lat, () => d.release());
  },
};
const results = new Map(Object.keys(contenders).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(contenders);
  for (let k = 0; k < names.length; k++) {
    const name = names[(round + k) % names.length];
    const s = setup(name.startsWith("rate") ? RATE : LEASE, `sp-${round}-${k}:`);
    await s.ready();
    await measure(contenders[name](s.limiter)); // warm-up round trip of the same size
    results.get(name).push(await measure(contenders[name](s.limiter)));
    await s.close();
  }
}

console.log(`Round trips: ${SEQUENTIAL} operations one at a time (private redis-server ${url})`);
console.table(trips);
console.log(
  `\nSpeed: ${OPS} pairs/checks over ${KEYS} keys, ${IN_FLIGHT} in flight, median of ${ROUNDS} rounds; load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
const rows = [...results].map(([name, rs]) => ({
  contender: name,
  "Redis operations/s": Math.round(median(rs.map((r) => r.opsPerSecond))),
  "p50 ms per operation": median(rs.map((r) => r.p50)).toFixed(2),
  "p99 ms per operation": median(rs.map((r) => r.p99)).toFixed(2),
}));
console.table(rows);
const rate = rows[0];
const lease = rows[1];
console.log(
  `lease operation / rate check: p50 ×${(Number(lease["p50 ms per operation"]) / Number(rate["p50 ms per operation"])).toFixed(2)}, throughput ×${(lease["Redis operations/s"] / rate["Redis operations/s"]).toFixed(2)}`,
);

server.stop();

// Redis benchmark: sluice's RedisStore beside rate-limiter-flexible's RateLimiterRedis, same
// ioredis client kind, same Redis, one process: decisions over 10k keys with 64 in flight.
// Reports decisions/s, p50/p99 latency, Redis CPU per decision two ways (INFO cpu: the whole
// server, network included; INFO commandstats: the commands' own time), this process's CPU per
// decision (is a contender client-bound?) and bytes per key (MEMORY USAGE sample).
// The machine may be shared and noisy. Each contender keeps one limiter and one client for the
// whole run, and the run alternates between them in short slices of time (BENCH_ROUNDS rounds,
// each running every contender for BENCH_SLICE_MS in a rotating order), so a burst of other work
// lands on every contender alike. Slices are bounded by time, not by a count of decisions: a
// slice of 2,000 decisions (~14 ms) is shorter than the scheduler's period on a loaded 2-core
// machine, and its ratio said who was preempted (0.95x to 2.46x in one run). The headline ratios
// pool every slice (total decisions ÷ total time; p99 over every latency); the min / median / max
// of the per-round ratios are printed beside them, with the load average, and the ratio of CPU
// per decision (Redis and this process together), which stalls do not move: the throughput
// ratio where both sides are CPU-bound, as on a busy machine; its per-round min / median / max
// too (the min: the worst round). BENCH_ROUNDS_LOG=1 prints every round's ratios.
// Contenders (sluice's on the user's own ioredis client with default options, as a user
// migrating passes it in, unless named otherwise):
//   sluice fixed-window, sluice gcra, sluice gcra (EVALSHA: a user whose ACL refuses FCALL and
//   FUNCTION, as on servers older than 7 and some managed services), sluice gcra
//   (RedisStore.connect: the client sluice builds), rate-limiter-flexible.
// By default the server is a private redis-server started here (so its counters hold only this
// run's commands, and no other process's commands queue ahead of them); REDIS_URL names another
// (then the EVALSHA contender is left out: it needs an ACL user).
// Then abusive traffic: 100 keys already over their limit, hammered with BENCH_DECISIONS checks
// (on a private server): decisions/s, Redis commands per repeated denial and Redis CPU per
// decision, sluice (deny cache on, and off) beside rate-limiter-flexible.
// Run with: npm run build && node bench/redis.mjs
// (BENCH_ROUNDS, default 20; BENCH_SLICE_MS, default 150; BENCH_DECISIONS, default 100,000: the
// warm-up (at most 20,000) and the abusive part; BENCH_ONLY=a,b keeps the named contenders and
// rate-limiter-flexible; BENCH_ABUSE=0 skips the abusive part.)
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";
import {
  commandStats,
  loadAverage,
  median,
  privateRedis,
  quantile,
  ready,
  serverCpuSeconds,
  spread,
  statsDelta,
  timedSlice,
} from "./redis-kit.mjs";

const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const SLICE_MS = Number(process.env.BENCH_SLICE_MS ?? 150);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const run = Math.random().toString(36).slice(2, 8);
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
// The user's own client: warnings about its options are expected here.
process.removeAllListeners("warning");

// Expired keys are deleted as they are read (lazily), not by the server's background cycle: a
// gcra record expires once its arrival time passes (600 ms after a lone check here), and the
// background cycle deleted the gcra contenders' keys during whichever slice ran next (mostly
// other contenders', rate-limiter-flexible's included: its 60 s windows never expire in a run),
// charging them Redis CPU and time that was gcra's. Read lazily, each contender pays for its own.
const own = process.env.REDIS_URL === undefined ? await privateRedis(["--enable-debug-command", "local"]) : undefined;
const URL = own?.url ?? process.env.REDIS_URL;
const admin = own?.admin ?? new Redis(URL);
if (own !== undefined) {
  if (process.env.BENCH_ACTIVE_EXPIRE !== "1") await admin.call("DEBUG", "SET-ACTIVE-EXPIRE", "0");
  // The EVALSHA contender's user: everything but functions.
  await admin.call("ACL", "SETUSER", "scripts", "on", "nopass", "~*", "&*", "+@all", "-fcall", "-function");
}

/**
 * One slice: `check` for SLICE_MS (or, with `n`, exactly `n` checks: the warm-up), IN_FLIGHT at
 * a time, over the keys in a strided cycle from `start`, with the server's and this process's
 * CPU around it.
 */
async function measure(check, start, n) {
  const cpu0 = await serverCpuSeconds(admin);
  const stats0 = await commandStats(admin);
  const own0 = process.cpuUsage();
  let out;
  if (n === undefined) out = await timedSlice(check, keys, start, SLICE_MS, IN_FLIGHT);
  else {
    let next = 0;
    const worker = async () => {
      while (next < n) await check(keys[((start + next++) * 7919) % KEYS]);
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    out = { n, seconds: (performance.now() - started) / 1000, latencies: [] };
  }
  const client = process.cpuUsage(own0);
  const stats = statsDelta(stats0, await commandStats(admin));
  const cpu = (await serverCpuSeconds(admin)) - cpu0;
  return { ...out, cpu, commandUsec: stats.usec, clientUsec: client.user + client.system };
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
  return total / Math.min(sample.length, 500);
}

async function cleanup(pattern) {
  let cursor = "0";
  do {
    const [next, found] = await admin.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (found.length > 0) await admin.unlink(...found);
  } while (cursor !== "0");
}

const GCRA = { algorithm: "gcra", limit: 100, periodMs: 60_000 };
const FIXED = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 };

/** A sluice contender on a client made by `connect(prefix)` (resolving to { store, close }). */
function sluice(name, tag, spec, connect) {
  const prefix = `bench-${tag}-${run}:`;
  return {
    name,
    pattern: `${prefix}*`,
    async make() {
      const { store, close } = await connect(prefix);
      const limiter = createLimiter(spec, { store });
      return { check: async (key) => (await limiter.tryAcquire(key)).allowed, close };
    },
  };
}
/** On the user's own ioredis client, default options (`options` for the client beside the URL). */
const userClient = (options) => async (prefix) => {
  const client = new Redis(URL, options);
  await ready(client);
  const store = new RedisStore({ client, prefix });
  return { store, close: () => store.close().then(() => client.disconnect()) };
};

const contenders = [
  sluice("sluice fixed-window", "fw", FIXED, userClient({})),
  sluice("sluice gcra", "gc", GCRA, userClient({})),
  ...(own === undefined
    ? []
    : [sluice("sluice gcra (EVALSHA)", "ge", GCRA, userClient({ username: "scripts", password: "x" }))]),
  sluice("sluice gcra (RedisStore.connect)", "gk", GCRA, async (prefix) => {
    const store = await RedisStore.connect({ url: URL, prefix });
    return { store, close: () => store.close() };
  }),
  {
    name: "rate-limiter-flexible",
    // The same length as sluice's prefixes, so bytes/key compares like with like.
    pattern: `bench-rl-${run}:*`,
    async make() {
      const client = new Redis(URL);
      await ready(client);
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
        close: async () => client.disconnect(),
      };
    },
  },
].filter((c) => ONLY === undefined || c.name === "rate-limiter-flexible" || ONLY.includes(c.name));

const loadBefore = loadAverage();
const live = [];
for (const c of contenders) {
  await cleanup(c.pattern);
  const made = await c.make();
  await measure(made.check, 0, Math.min(DECISIONS, 20_000)); // warm-up: keys filled, library or script loaded
  live.push({ ...c, ...made, slices: [] });
}
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < live.length; i++) {
    const c = live[(i + round) % live.length];
    // Keys taken up where this contender's last slice left them.
    c.slices.push(
      await measure(
        c.check,
        c.slices.reduce((a, s) => a + s.n, 0),
      ),
    );
    // Sampled at once: gcra's records expire seconds after their last check.
    if (round === ROUNDS - 1) c.bytes = await bytesPerKey(c.pattern);
  }
}
const loadAfter = loadAverage();

const summary = new Map();
for (const c of live) {
  const all = new Float64Array(c.slices.reduce((a, s) => a + s.n, 0));
  let at = 0;
  for (const s of c.slices) {
    all.set(s.latencies, at);
    at += s.n;
  }
  all.sort();
  const n = all.length;
  const sum = (f) => c.slices.reduce((a, s) => a + f(s), 0);
  summary.set(c.name, {
    perSecond: n / sum((s) => s.seconds),
    p50: quantile(all, 0.5),
    p99: quantile(all, 0.99),
    serverCpu: (sum((s) => s.cpu) / n) * 1e6,
    commandCpu: sum((s) => s.commandUsec) / n,
    clientCpu: sum((s) => s.clientUsec) / n,
    bytes: c.bytes,
    slices: c.slices.map((s) => ({
      rate: s.n / s.seconds,
      // CPU per decision in this slice, Redis's and this process's together (µs).
      cpu: (s.cpu * 1e6 + s.clientUsec) / s.n,
      p99: quantile(
        s.latencies.sort((a, b) => a - b),
        0.99,
      ),
    })),
  });
  await c.close();
  await cleanup(c.pattern);
}
const base = summary.get("rate-limiter-flexible");
if (process.env.BENCH_ROUNDS_LOG === "1") {
  for (const [name, r] of summary) {
    if (r === base) continue;
    console.log(
      `${name} per round (× rlf decisions/s, rlf's CPU ÷ this, p99 ÷ rlf): ${r.slices
        .map(
          (s, i) =>
            `${(s.rate / base.slices[i].rate).toFixed(2)}/${(base.slices[i].cpu / s.cpu).toFixed(2)}/${(s.p99 / base.slices[i].p99).toFixed(2)}`,
        )
        .join(" ")}`,
    );
  }
}
console.log(
  `Redis benchmark: ${ROUNDS} rounds, each running every contender for ${SLICE_MS} ms in a rotating order, over ${KEYS} keys, ${IN_FLIGHT} in flight (${own ? "private redis-server" : URL})`,
);
console.table(
  [...summary].map(([name, r]) => ({
    contender: name,
    "decisions/s": Math.round(r.perSecond),
    "× rlf": (r.perSecond / base.perSecond).toFixed(2),
    "× rlf per round (min / median / max)": spread(r.slices.map((s, i) => s.rate / base.slices[i].rate)),
    "p50 ms": r.p50.toFixed(3),
    "p99 ms": r.p99.toFixed(3),
    "p99 ÷ rlf": (r.p99 / base.p99).toFixed(2),
    "p99 ÷ rlf per round (min / median / max)": spread(r.slices.map((s, i) => s.p99 / base.slices[i].p99)),
    "Redis CPU µs/decision": r.serverCpu.toFixed(2),
    "Redis command µs/decision": r.commandCpu.toFixed(2),
    "client CPU µs/decision": r.clientCpu.toFixed(2),
    // What the ratio is where both contenders are CPU-bound (a busy machine): stalls cost no CPU.
    "rlf's CPU ÷ this (Redis + client)": ((base.serverCpu + base.clientCpu) / (r.serverCpu + r.clientCpu)).toFixed(2),
    // Each round's CPU ratio: its min is the worst round where both sides are CPU-bound.
    "CPU ratio per round (min / median / max)": spread(r.slices.map((s, i) => base.slices[i].cpu / s.cpu)),
    "bytes/key": Math.round(r.bytes),
  })),
);
console.log(`load average before: ${loadBefore}; after: ${loadAfter}`);
if (own === undefined) admin.disconnect();
else own.stop();
if (process.env.BENCH_ABUSE === "0") process.exit(0);

// --- Abusive traffic, on a private server -------------------------------------------------
const ABUSERS = 100;
const ABUSE_LIMIT = 10;
const ABUSE_ROUNDS = 5;

const abuseServer = await privateRedis();
const privateUrl = abuseServer.url;
const privateAdmin = abuseServer.admin;

/** Commands the private server has run (INFO's own calls excluded) and its CPU seconds. */
async function serverCounters() {
  const stats = Object.values(await commandStats(privateAdmin));
  return { calls: stats.reduce((a, s) => a + s.calls, 0), cpu: await serverCpuSeconds(privateAdmin) };
}

const abusers = Array.from({ length: ABUSERS }, (_, i) => `abuser:${i}`);
const abuseContenders = [
  {
    name: "sluice gcra (deny cache)",
    make(prefix) {
      const client = new Redis(privateUrl);
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
      const client = new Redis(privateUrl);
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
for (let round = 0; round < ABUSE_ROUNDS; round++) {
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
  `\nAbusive traffic: ${DECISIONS} checks over ${ABUSERS} keys already over their limit (${ABUSE_LIMIT}/min), ${IN_FLIGHT} in flight, median of ${ABUSE_ROUNDS} rounds (private redis-server)`,
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
abuseServer.stop();

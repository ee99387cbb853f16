// Redis's instructions per decision, counted by valgrind (callgrind) on a private redis-server:
// a figure the machine's load does not move, for comparing Redis-side changes (the script, its
// arguments, the reply) where timings on a shared machine drown them, and for comparing with
// rate-limiter-flexible (the same limit over the same keys). Per spec: 10k decisions fill 10k
// keys (not counted), then BENCH_DECISIONS more over the same keys, 64 in flight, through
// RedisStore and ioredis, by FCALL and by EVALSHA (a user refused functions); the count covers
// everything the server did meanwhile (parsing, the program, its commands, replies). With
// BASE_DIST (another build's dist/, e.g. main's) both builds run against the same server.
// Needs valgrind and redis-server. Run with:
//   npm run build && node bench/redis-callgrind.mjs   (BASE_DIST=/path/to/other/dist, BENCH_DECISIONS, BENCH_IN_FLIGHT, BENCH_SPECS)
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { decideMany } from "./decide-loop.mjs";
import { callgrindRedis } from "./redis-kit.mjs";

const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 10_000);
const KEYS = 10_000;
// BENCH_IN_FLIGHT=1 sends one check per call: the fixed cost of a call.
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 64);
const SPECS = {
  "fixed-window": { algorithm: "fixed-window", limit: 1_000_000, windowMs: 3_600_000 },
  gcra: { algorithm: "gcra", limit: 1_000_000, periodMs: 3_600_000 },
  // gcra's records expire once its backlog drains: at 1M/hour a key's 3.6 ms after its check, so
  // every check above finds its key gone. Here (86.4 s per request) every key is still there, as
  // in bench/redis.mjs (100 a minute over 10k keys) and wherever a key comes back within its period.
  "gcra (live keys)": { algorithm: "gcra", limit: 1_000, periodMs: 86_400_000 },
};
// BENCH_SPECS=gcra (comma-separated) counts only those specs.
const only = process.env.BENCH_SPECS?.split(",");
// BENCH_KEEP=1 keeps the dumps (their paths printed) for callgrind_annotate.
const KEEP = process.env.BENCH_KEEP === "1";
const builds = { this: fileURLToPath(new URL("../dist", import.meta.url)) };
if (process.env.BASE_DIST) builds.base = process.env.BASE_DIST;

const { admin, url, counted, stop } = await callgrindRedis({ keep: KEEP });

const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const decide = (limiter, n) => decideMany(limiter, keys, n, IN_FLIGHT);
/** Fills every key first, 64 in flight whatever IN_FLIGHT is (one at a time under valgrind takes minutes). */
const fill = (limiter) => decideMany(limiter, keys, KEYS, 64);

// The user "scripts" is refused FCALL and FUNCTION (as on servers older than 7 and some managed
// services): its store falls back to EVALSHA of the same program.
await admin.call("ACL", "SETUSER", "scripts", "on", "nopass", "~*", "&*", "+@all", "-fcall", "-function");
const rows = [];
for (const [name, spec] of Object.entries(SPECS)) {
  if (only !== undefined && !only.includes(name)) continue;
  const row = { spec: name };
  for (const [build, path] of Object.entries(builds)) {
    const { createLimiter } = await import(`${path}/index.js`);
    const { RedisStore } = await import(`${path}/stores/redis/index.js`);
    for (const [how, user] of [
      ["FCALL", {}],
      ["EVALSHA", { username: "scripts", password: "x" }],
    ]) {
      const client = new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, ...user });
      await new Promise((r) => client.once("ready", r));
      const prefix = `cg-${build}-${Math.random().toString(36).slice(2, 8)}:`;
      const store = new RedisStore({ client, prefix, timeoutMs: 60_000, denyCache: false });
      const limiter = createLimiter(spec, { store });
      await fill(limiter);
      row[`${build} ${how}`] = Math.round((await counted(() => decide(limiter, DECISIONS))) / DECISIONS);
      await store.close();
      client.disconnect();
    }
  }
  // rate-limiter-flexible (a fixed window of the same limit): one EVALSHA per decision.
  const client = new Redis(url);
  const rlf = new RateLimiterRedis({
    storeClient: client,
    points: spec.limit,
    duration: (spec.windowMs ?? spec.periodMs) / 1000,
    keyPrefix: `cg-rl-${name}`,
  });
  const consume = {
    tryAcquire: (key) =>
      rlf.consume(key, 1).then(
        () => ({}),
        () => ({}),
      ),
  };
  await fill(consume);
  row["rate-limiter-flexible"] = Math.round((await counted(() => decide(consume, DECISIONS))) / DECISIONS);
  client.disconnect();
  row["rlf ÷ this FCALL"] = (row["rate-limiter-flexible"] / row["this FCALL"]).toFixed(2);
  if (builds.base) row["this ÷ base (FCALL)"] = (row["this FCALL"] / row["base FCALL"]).toFixed(3);
  rows.push(row);
}
console.log(
  `Redis instructions per decision (callgrind), ${DECISIONS} decisions over ${KEYS} existing keys, ${IN_FLIGHT} in flight`,
);
console.table(rows);
stop();

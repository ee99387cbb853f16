// The client's instructions per decision, counted by valgrind (callgrind) on this Node process:
// the Node-side twin of redis-callgrind.mjs (which counts Redis's). Per spec: 10k decisions fill
// 10k keys, BENCH_DECISIONS more warm up, then BENCH_DECISIONS are counted (64 in flight, through
// RedisStore and ioredis, a unique prefix on REDIS_URL). The process zeroes and dumps its own
// counters with callgrind_control; the summary of the last dump (out.1) is the count.
// Batch sizes, and so the count, move a little with how fast Redis answers: compare builds in
// runs made side by side. Run with (DIST: the build to count, default ./dist):
//   npm run build && SPEC=gcra valgrind --tool=callgrind --callgrind-out-file=/tmp/cg/out \
//     node --expose-gc bench/redis-client-callgrind.mjs && grep summary /tmp/cg/out.1
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { decideMany } from "./decide-loop.mjs";

const DIST = process.env.DIST ?? fileURLToPath(new URL("../dist", import.meta.url));
const N = Number(process.env.BENCH_DECISIONS ?? 5000);
const KEYS = 10_000;
const IN_FLIGHT = 64;
const SPECS = {
  "fixed-window": { algorithm: "fixed-window", limit: 1_000_000, windowMs: 3_600_000 },
  gcra: { algorithm: "gcra", limit: 1_000_000, periodMs: 3_600_000 },
};
const spec = SPECS[process.env.SPEC ?? "gcra"];
const { createLimiter } = await import(`${DIST}/index.js`);
const { RedisStore } = await import(`${DIST}/stores/redis/index.js`);
const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
});
await new Promise((r) => client.once("ready", r));
const prefix = `client-cg-${Math.random().toString(36).slice(2, 8)}:`;
const store = new RedisStore({ client, prefix, timeoutMs: 600_000, denyCache: false });
const limiter = createLimiter(spec, { store });
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

const decide = (n) => decideMany(limiter, keys, n, IN_FLIGHT);

/** Runs callgrind_control on this process (asynchronously: valgrind must keep running it). */
const control = (flag) =>
  new Promise((resolve) =>
    spawn("callgrind_control", [flag, String(process.pid)], { stdio: "ignore" }).on("exit", resolve),
  );

await decide(KEYS);
await decide(N);
// A collection started before the count would otherwise land in it.
globalThis.gc?.();
await control("-z");
await decide(N);
await control("-d");
console.log(`${N} decisions counted (${process.env.SPEC ?? "gcra"}); per decision: summary of the dump ÷ ${N}`);
await store.close();
client.disconnect();

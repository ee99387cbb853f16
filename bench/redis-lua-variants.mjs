// Redis instructions per decision for variants of the check program, counted by valgrind
// (callgrind) on a private redis-server: each variant is a function from the function library's
// text to a changed text, loaded under the real function's name (FUNCTION LOAD REPLACE) before a
// RedisStore calls it, so a Lua change is measured without a rebuild. The server is flushed before
// each variant (a keyspace grown by earlier variants would rehash during a later count). Per
// variant: BENCH_KEYS checks fill the keys (not counted), then BENCH_DECISIONS are counted, 64 in
// flight. A variant's replies must stay well-formed (a check answered by the failure policy throws).
// VARIANTS names a module whose default export is { name: (libraryText) => libraryText }; the
// example below runs the library as it is, twice (the spread between the two is the noise).
// Run with: npm run build && VARIANTS=/path/to/variants.mjs node bench/redis-lua-variants.mjs
// (SPEC: a limit spec as JSON, default gcra 1,000 a day: every key still there at its next check.)
import { Redis } from "ioredis";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";
import { checkScript } from "../dist/stores/redis/script.js";
import { decideMany } from "./decide-loop.mjs";
import { callgrindRedis } from "./redis-kit.mjs";

const N = Number(process.env.BENCH_DECISIONS ?? 5000);
const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const spec = JSON.parse(process.env.SPEC ?? '{"algorithm":"gcra","limit":1000,"periodMs":86400000}');
const variants = process.env.VARIANTS
  ? (await import(process.env.VARIANTS)).default
  : { "as built": (text) => text, "as built, again": (text) => text };

const { admin, url, counted, stop } = await callgrindRedis();

const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const { library } = checkScript();
const rows = [];
try {
  for (const [name, transform] of Object.entries(variants)) {
    await admin.call("FUNCTION", "FLUSH");
    await admin.call("FLUSHALL");
    await admin.call("FUNCTION", "LOAD", "REPLACE", transform(library));
    const client = new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
    await new Promise((r) => client.once("ready", r));
    const store = new RedisStore({ client, prefix: "v:", timeoutMs: 60_000, denyCache: false });
    const limiter = createLimiter(spec, { store });
    await decideMany(limiter, keys, KEYS, 64);
    rows.push({
      variant: name,
      "Redis instructions/decision": Math.round((await counted(() => decideMany(limiter, keys, N, 64))) / N),
    });
    await store.close();
    client.disconnect();
  }
} finally {
  stop();
}
console.log(`Redis instructions per decision (callgrind), ${N} decisions over ${KEYS} existing keys, 64 in flight`);
console.table(rows);

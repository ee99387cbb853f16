// A/B of the Redis script between two builds: this checkout's dist/ (B) and another build's
// dist/ (A, e.g. main's), on one Redis, in short alternating runs (64 in flight over 10k keys),
// so slow drifts of a noisy machine hit both alike. Reports Redis's own script time per decision
// (INFO commandstats: fcall + evalsha + eval) and the per-pair ratios B ÷ A. Use a Redis nobody else is
// scripting against (commandstats are server-wide).
// Run with: npm run build && BASE_DIST=/path/to/main/dist REDIS_URL=redis://127.0.0.1:PORT node bench/redis-ab.mjs
// (ONLY=fw,gc,tb,sl,co picks specs; PAIRS, default 40.)
import { Redis } from "ioredis";
import { createLimiter } from "../dist/index.js";
import { RedisStore } from "../dist/stores/redis/index.js";

const base = process.env.BASE_DIST;
if (base === undefined) throw new Error("set BASE_DIST to the other build's dist/ folder");
const A = {
  createLimiter: (await import(`${base}/index.js`)).createLimiter,
  RedisStore: (await import(`${base}/stores/redis/index.js`)).RedisStore,
};
const B = { createLimiter, RedisStore };

const URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const N = 4000;
const KEYS = 10_000;
const IN_FLIGHT = 64;
const PAIRS = Number(process.env.PAIRS ?? 40);
const SPECS = {
  fw: { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
  gc: { algorithm: "gcra", limit: 100, periodMs: 60_000 },
  tb: { algorithm: "token-bucket", capacity: 100, refillPerSecond: 2 },
  sl: { algorithm: "sliding-log", limit: 10, windowMs: 60_000 },
  co: [
    { algorithm: "gcra", limit: 100, periodMs: 60_000 },
    { algorithm: "fixed-window", limit: 1000, windowMs: 3_600_000 },
  ],
};
const only = (process.env.ONLY ?? Object.keys(SPECS).join(",")).split(",");
const admin = new Redis(URL);
const client = new Redis(URL);
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const run = Math.random().toString(36).slice(2, 8);

async function scriptMicros() {
  const info = await admin.info("commandstats");
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_(?:fcall|evalsha|eval):calls=\d+,usec=(\d+)/gm)) total += Number(m[1]);
  return total;
}

let offset = 0;
/** N checks, IN_FLIGHT at a time: [script µs per decision, decisions per ms]. */
async function measure(limiter) {
  let next = 0;
  const from = offset;
  offset += N;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      await limiter.tryAcquire(keys[((from + i) * 7919) % KEYS]);
    }
  };
  const s0 = await scriptMicros();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const ms = performance.now() - t0;
  return [((await scriptMicros()) - s0) / N, N / ms];
}

async function cleanup(pattern) {
  let cursor = "0";
  do {
    const [next, found] = await admin.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (found.length > 0) await admin.unlink(...found);
  } while (cursor !== "0");
}

const median = (values) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
const rows = [];
for (const tag of only) {
  const spec = SPECS[tag];
  const a = A.createLimiter(spec, { store: new A.RedisStore({ client, prefix: `ab-a-${tag}-${run}:` }) });
  const b = B.createLimiter(spec, { store: new B.RedisStore({ client, prefix: `ab-b-${tag}-${run}:` }) });
  for (let i = 0; i < 2; i++) {
    await measure(a);
    await measure(b);
  }
  const aUs = [];
  const bUs = [];
  const scriptRatio = [];
  const rateRatio = [];
  for (let p = 0; p < PAIRS; p++) {
    // Alternate which goes first, so neither always follows the other.
    let ra;
    let rb;
    if (p % 2 === 0) {
      ra = await measure(a);
      rb = await measure(b);
    } else {
      rb = await measure(b);
      ra = await measure(a);
    }
    aUs.push(ra[0]);
    bUs.push(rb[0]);
    scriptRatio.push(rb[0] / ra[0]);
    rateRatio.push(rb[1] / ra[1]);
  }
  rows.push({
    spec: tag,
    "A script µs/decision": median(aUs).toFixed(2),
    "B script µs/decision": median(bUs).toFixed(2),
    "B ÷ A script time": median(scriptRatio).toFixed(3),
    "B ÷ A decisions/s": median(rateRatio).toFixed(3),
  });
  await cleanup(`ab-?-${tag}-${run}:*`);
}
console.log(`Redis script A/B: ${N} decisions per run, ${PAIRS} pairs per spec, ${IN_FLIGHT} in flight (${URL})`);
console.table(rows);
client.disconnect();
admin.disconnect();

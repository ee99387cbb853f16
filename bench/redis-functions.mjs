// Redis Functions (FUNCTION LOAD + FCALL, Redis >= 7) against EVALSHA, for the same check
// script and the same batches: Redis CPU per call (INFO commandstats usec_per_call) and calls
// per second, 32-check uniform batches (the batcher's full batch) over 10k keys, 8 in flight.
// Then the fixed cost of one call: EVALSHA with 1 check against 32 checks per call.
// Run with: npm run build && node bench/redis-functions.mjs   (REDIS_URL, BENCH_CALLS)
import { Redis } from "ioredis";
import { checkScript } from "../dist/stores/redis/script.js";

const URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const BATCH = 32;
const IN_FLIGHT = 8;
const ROUNDS = 3;
const run = Math.random().toString(36).slice(2, 8);
const client = new Redis(URL);
const admin = new Redis(URL);
const { source, sha } = checkScript();
// The same program as a function: KEYS and ARGV become the function's parameters.
const library = `#!lua name=sluicebench${run}\nlocal function check(KEYS, ARGV)\n${source}\nend\nredis.register_function('sluice_check_${run}', check)\n`;
await client.script("LOAD", source);
await client.call("FUNCTION", "LOAD", "REPLACE", library);

const args = ["", "0", "1", "1", "f", "100", "60000", "=", "1", "1", "5000"];
const keysFor = (i) =>
  Array.from({ length: BATCH }, (_, j) => `bench-fn-${run}:{${(i * BATCH + j) % 10_000}}k${(i * BATCH + j) % 10_000}`);

async function stats(command) {
  const info = await admin.info("commandstats");
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(info);
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

async function measure(name, call) {
  const before = await stats(name);
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < CALLS) {
      const i = next++;
      const reply = await call(keysFor(i));
      if (!Array.isArray(reply) || reply.length !== BATCH * 4 + 1) throw new Error(`bad reply ${reply}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  const after = await stats(name);
  return { perSecond: CALLS / seconds, usecPerCall: (after.usec - before.usec) / (after.calls - before.calls) };
}

const evalsha = (keys) => client.evalsha(sha, keys.length, keys, args);
const fcall = (keys) => client.fcall(`sluice_check_${run}`, keys.length, keys, args);
const results = { EVALSHA: [], FCALL: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, command, call] of r % 2 === 0
    ? [
        ["EVALSHA", "evalsha", evalsha],
        ["FCALL", "fcall", fcall],
      ]
    : [
        ["FCALL", "fcall", fcall],
        ["EVALSHA", "evalsha", evalsha],
      ]) {
    results[name].push(await measure(command, call));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${CALLS} calls of ${BATCH} checks each, ${IN_FLIGHT} in flight, median of ${ROUNDS} rounds (${URL})`);
console.table(
  Object.entries(results).map(([name, rs]) => ({
    command: name,
    "calls/s": Math.round(median(rs.map((x) => x.perSecond))),
    "checks/s": Math.round(median(rs.map((x) => x.perSecond)) * BATCH),
    "Redis µs/call": median(rs.map((x) => x.usecPerCall)).toFixed(1),
    "Redis µs/check": (median(rs.map((x) => x.usecPerCall)) / BATCH).toFixed(2),
  })),
);
// The fixed cost of a call (parsing the program's top level: every algorithm's constructor and
// helpers are defined on each call) against the cost of each check.
const bySize = {};
for (const size of [1, 32, 1, 32]) {
  const before = await stats("evalsha");
  for (let i = 0; i < 3000; i++) {
    const keys = Array.from({ length: size }, (_, j) => `bench-fn-${run}:{${(i * size + j) % 10_000}}s${size}`);
    await client.evalsha(sha, keys.length, keys, args);
  }
  const after = await stats("evalsha");
  (bySize[size] ??= []).push((after.usec - before.usec) / (after.calls - before.calls));
}
const one = Math.min(...bySize[1]);
const full = Math.min(...bySize[32]);
const perCheck = (full - one) / 31;
console.log(
  `EVALSHA, Redis µs per call (best of 2): 1 check ${one.toFixed(1)}, 32 checks ${full.toFixed(1)}; so about ${(one - perCheck).toFixed(1)} µs per call and ${perCheck.toFixed(1)} µs per check`,
);
await client.call("FUNCTION", "DELETE", `sluicebench${run}`);
let cursor = "0";
do {
  const [nextCursor, found] = await admin.scan(cursor, "MATCH", `bench-fn-${run}:*`, "COUNT", 1000);
  cursor = nextCursor;
  if (found.length > 0) await admin.unlink(...found);
} while (cursor !== "0");
client.disconnect();
admin.disconnect();

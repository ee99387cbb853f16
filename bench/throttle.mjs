// createThrottle benchmark, side by side in one run:
// 1. In-process overhead per job against p-queue and bottleneck: batches of BATCH no-op async
//    jobs scheduled at once and awaited, under a concurrency limit (10) and under a rate limit
//    never reached; medians over BENCH_ROUNDS rounds, the three libraries interleaved in each.
// 2. A fleet of 4 processes on Redis (REDIS_URL, default 127.0.0.1:6379) × FLEET_JOBS jobs of
//    random priority and 0-20 ms duration, limited to RATE starts a second: throughput as a share
//    of the configured rate (starts over the span from the first start to the last), for sluice
//    (test/throttle/fleet-child.mjs: gcra, burst 1, plus concurrency 8) and for bottleneck
//    clustered on the same Redis (`datastore: "ioredis"`, minTime 1000/RATE, maxConcurrent 8),
//    and the Redis commands per job: those the processes send (EVALSHA), and every command Redis
//    ran, counted by INFO commandstats (the scripts' own calls and their PUBLISHes included) on a
//    redis-server started for the run (REDIS_URL, if set, is used instead, without that count).
// Run with: npm run build && node bench/throttle.mjs
// Knobs: BENCH_ROUNDS, BENCH_BATCH, BENCH_BATCHES, BENCH_RATE, FLEET_JOBS; BENCH_FLEET_ONLY=1 skips
// the in-process part; BENCH_NO_CONCURRENCY=1 runs sluice's fleet on the rate alone; BENCH_POLL_MS
// sets its `pollMs`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import PQueue from "p-queue";
import { createThrottle } from "../dist/index.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BATCH = Number(process.env.BENCH_BATCH ?? 1000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 20);
const RATE = Number(process.env.BENCH_RATE ?? 200);
const FLEET_JOBS = Number(process.env.FLEET_JOBS ?? 300);
let REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A redis-server of this run's own (so INFO commandstats counts only this run), or undefined. */
async function ownRedis() {
  if (process.env.REDIS_URL) return undefined;
  const port = await new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir], {
    stdio: "ignore",
  });
  const failed = await new Promise((resolve) => {
    child.once("error", () => resolve(true));
    setTimeout(() => resolve(false), 300);
  });
  if (failed) return undefined;
  const client = new Redis({ port, host: "127.0.0.1" });
  await client.ping();
  return {
    url: `redis://127.0.0.1:${port}`,
    client,
    /** Calls per command since the last reset. */
    async stats() {
      const text = await client.info("commandstats");
      const out = {};
      for (const m of text.matchAll(/cmdstat_(\w+(?:\|\w+)?):calls=(\d+)/g)) out[m[1]] = Number(m[2]);
      return out;
    },
    reset: () => client.config("RESETSTAT"),
    async stop() {
      client.disconnect();
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
const noop = async () => {};

/** Microseconds per job for `schedule` over BATCHES batches of BATCH jobs. */
async function perJob(schedule) {
  const start = performance.now();
  for (let b = 0; b < BATCHES; b++) {
    const all = new Array(BATCH);
    for (let i = 0; i < BATCH; i++) all[i] = schedule(noop);
    await Promise.all(all);
  }
  return ((performance.now() - start) * 1000) / (BATCH * BATCHES);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const SCENARIOS = {
  "concurrency 10": {
    sluice: () => createThrottle({ concurrency: 10 }),
    pQueue: () => new PQueue({ concurrency: 10 }),
    bottleneck: () => new Bottleneck({ maxConcurrent: 10 }),
  },
  "rate never reached": {
    sluice: () => createThrottle({ rate: { algorithm: "gcra", limit: 1e9, periodMs: 1000 } }),
    pQueue: () => new PQueue({ interval: 1000, intervalCap: 1e9 }),
    bottleneck: () => new Bottleneck({ reservoir: 1e12 }),
  },
};

async function inProcess() {
  console.log(`In-process overhead per job (µs; batches of ${BATCH}, median of ${ROUNDS} rounds):`);
  for (const [name, make] of Object.entries(SCENARIOS)) {
    const times = { sluice: [], pQueue: [], bottleneck: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const t = make.sluice();
      times.sluice.push(await perJob((f) => t.schedule(f)));
      await t.close();
      const q = make.pQueue();
      times.pQueue.push(await perJob((f) => q.add(f)));
      const b = make.bottleneck();
      times.bottleneck.push(await perJob((f) => b.schedule(f)));
      await b.stop();
    }
    const s = median(times.sluice);
    const p = median(times.pQueue);
    const b = median(times.bottleneck);
    console.log(
      `  ${name.padEnd(20)} sluice ${s.toFixed(2)}  p-queue ${p.toFixed(2)}  bottleneck ${b.toFixed(2)}` +
        `   p-queue/sluice ${(p / s).toFixed(2)}x  bottleneck/sluice ${(b / s).toFixed(2)}x`,
    );
  }
}

/** Spawns `script` once per seed, starts them together, returns their outputs. */
async function fleet(script, argsFor) {
  const children = await Promise.all(
    [1, 2, 3, 4].map(
      (seed) =>
        new Promise((resolve, reject) => {
          const proc = spawn(process.execPath, [script, ...argsFor(seed)], { stdio: ["pipe", "pipe", "ignore"] });
          let text = "";
          proc.stdout.setEncoding("utf8");
          const output = new Promise((done) => proc.on("close", () => done(text)));
          proc.stdout.on("data", (d) => {
            text += d;
            if (text.startsWith("ready\n")) resolve({ proc, output });
          });
          proc.on("error", reject);
        }),
    ),
  );
  for (const c of children) c.proc.stdin.end("go\n");
  // A process that has not finished after FLEET_TIMEOUT_MS is killed and reported as stuck.
  const timer = setTimeout(
    () => {
      for (const c of children) c.proc.kill("SIGKILL");
    },
    Number(process.env.FLEET_TIMEOUT_MS ?? 120_000),
  );
  const outputs = await Promise.all(children.map((c) => c.output));
  clearTimeout(timer);
  return outputs;
}

/** Starts per second over the span of the fleet's starts, as a share of RATE. */
function share(outputs) {
  const starts = outputs.flatMap((o) =>
    o
      .split("\n")
      .filter((l) => l.startsWith("S "))
      .map((l) => Number(l.split(" ")[2])),
  );
  const span = Math.max(...starts) - Math.min(...starts);
  // n starts spaced 1000/RATE apart span (n - 1) intervals.
  const perSecond = ((starts.length - 1) * 1000) / span;
  return { starts: starts.length, perSecond, share: perSecond / RATE };
}

/** Each process's final report (`{ stuck: true }` for one killed before it finished). */
const done = (outputs) =>
  outputs.map((o) => {
    const line = o.split("\n").find((l) => l.startsWith("D "));
    return line === undefined ? { stuck: true, failed: 0, commands: 0 } : JSON.parse(line.slice(2));
  });

async function fleets() {
  const own = await ownRedis();
  if (own !== undefined) REDIS_URL = own.url;
  console.log(`\nFleet of 4 processes on ${REDIS_URL}, ${FLEET_JOBS} jobs each, limit ${RATE} starts/s, 8 at once:`);
  const prefix = `sluice-bench-throttle:${process.pid}:`;
  const sluiceOptions = {
    rate: { algorithm: "gcra", limit: RATE, periodMs: 1000, burst: 1 },
    ...(process.env.BENCH_NO_CONCURRENCY ? {} : { concurrency: 8, leaseMs: 10_000 }),
    ...(process.env.BENCH_POLL_MS ? { pollMs: Number(process.env.BENCH_POLL_MS) } : {}),
  };
  const child = fileURLToPath(new URL("../test/throttle/fleet-child.mjs", import.meta.url));
  await own?.reset();
  const sluice = await fleet(child, (seed) => [
    REDIS_URL,
    prefix,
    JSON.stringify(sluiceOptions),
    String(FLEET_JOBS),
    String(seed),
  ]);
  const s = share(sluice);
  const d = done(sluice);
  const commands = d.reduce((n, x) => n + x.commands, 0);
  const failed = d.reduce((n, x) => n + x.failed.length, 0);
  const stats = (await own?.stats()) ?? {};
  const all = Object.entries(stats)
    .filter(
      ([name]) => !["info", "config|resetstat", "ping", "client|setname", "client|setinfo", "select"].includes(name),
    )
    .reduce((n, [, c]) => n + c, 0);
  const perJob = (names) => (names.reduce((n, name) => n + (stats[name] ?? 0), 0) / s.starts).toFixed(2);
  console.log(
    `  sluice      ${s.starts} starts, ${s.perSecond.toFixed(1)}/s = ${(s.share * 100).toFixed(1)}% of the limit; ` +
      `${(commands / s.starts).toFixed(2)} Redis commands sent per job; ${failed} failed`,
  );
  if (own !== undefined) {
    console.log(
      `              commandstats per job: EVALSHA+EVAL ${perJob(["evalsha", "eval"])}, PUBLISH ${perJob(["publish"])}, ` +
        `every command Redis ran (script calls included) ${(all / s.starts).toFixed(2)}`,
    );
  }
  const bChild = fileURLToPath(new URL("./throttle-bottleneck-child.mjs", import.meta.url));
  const bOptions = { minTime: Math.ceil(1000 / RATE), maxConcurrent: 8 };
  try {
    const bottleneck = await fleet(bChild, (seed) => [
      REDIS_URL,
      `bench-${process.pid}`,
      JSON.stringify(bOptions),
      String(FLEET_JOBS),
      String(seed),
    ]);
    const b = share(bottleneck);
    const bDone = done(bottleneck);
    const bFailed = bDone.reduce((n, x) => n + x.failed, 0);
    const stuck = bDone.filter((x) => x.stuck).length;
    console.log(
      `  bottleneck  ${b.starts} starts, ${b.perSecond.toFixed(1)}/s = ${(b.share * 100).toFixed(1)}% of the limit; ${bFailed} failed` +
        (stuck > 0 ? `; ${stuck} process(es) had not finished after FLEET_TIMEOUT_MS and were killed` : ""),
    );
    console.log(`  sluice/bottleneck throughput ${(s.perSecond / b.perSecond).toFixed(2)}x`);
  } catch (error) {
    console.log(`  bottleneck  failed on this Redis: ${error}`);
  }
  await own?.stop();
}

console.log(`node ${process.version}, load average ${loadavg()[0].toFixed(2)}`);
if (!process.env.BENCH_FLEET_ONLY) await inProcess();
await fleets();

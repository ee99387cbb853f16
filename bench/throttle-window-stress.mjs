// Stress harness for issue 32's over-limit windows (not in npm test): fleets of 4 members ×
// JOBS jobs of random priority 0-9 and duration 1-30 ms on one key, on Redis (4 forked
// processes, a unique prefix), SharedMemoryStore (4 worker threads) or ClusterStore (4 forked
// processes on a socket). Every task logs its own Date.now() at start (the one clock a user's
// checker sees), the store instant of its rate unit (the `start` event's `at`) and, for grants,
// how late this member heard them (arrival − the store's decision instant). Counts, by task time
// and by the store's instant: the most starts in a window (the rate's fixed windows, aligned as
// the store aligns them, for fixed-window; any span of windowMs otherwise), the most running at
// once, and throughput as a share of the limit.
// Run: npm run build && node bench/throttle-window-stress.mjs
// STRESS_STORES may add socket-parent: the 4 processes are the socket's clients and this process
// hosts it (with "socket" the first member hosts, and each hosting member's exit when its jobs are
// done costs the others a re-election and the new host's grace, REJOIN_GRACE_MS).
// Knobs: STRESS_STORES=redis,threads,socket  STRESS_ROUNDS=3  STRESS_JOBS=150
//        STRESS_SPECS='[{"algorithm":"fixed-window","limit":6,"windowMs":200}]'  STRESS_CONC=3,8
//        STRESS_SEED (first seed; each round adds 1)  REDIS_URL  STRESS_DIST (a build directory)
//        STRESS_DUMP (a path prefix: each run's records written to PREFIX-kind-cN-seed.json)
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

const self = fileURLToPath(import.meta.url);
// The built package to run (STRESS_DIST: another build's directory, to compare two side by side).
const DIST = process.env.STRESS_DIST
  ? new URL(`file://${process.env.STRESS_DIST}/`)
  : new URL("../dist/", import.meta.url);
const dist = (path) => import(new URL(path, DIST).href);
const role = process.env.STRESS_ROLE ?? (isMainThread ? "main" : "thread");

/** One member: runs its jobs on `store` and returns its records. */
async function member({ store, index, options, jobs, seed, go }) {
  const { createThrottle, systemClock } = await dist("./index.js");
  const { mulberry32 } = await dist("./core/seeded-random.js");
  const grants = new Map(); // at -> [{ lag, delay }]
  const open = store.openFleetQueue.bind(store);
  store.openFleetQueue = (config) => {
    const granted = config.listener.granted;
    config.listener.granted = (key, gs) => {
      const now = Date.now();
      for (const g of gs) {
        let list = grants.get(g.at);
        if (list === undefined) grants.set(g.at, (list = []));
        list.push({ lag: now - (g.at - g.delayMs), delay: g.delayMs });
      }
      granted(key, gs);
    };
    return open(config);
  };
  const throttle = createThrottle({ name: "stress", store, clock: systemClock, ...options });
  const random = mulberry32(seed * 7 + index);
  let lastAt;
  throttle.on("start", (e) => {
    if (e.key === "k") lastAt = e.at;
  });
  await throttle.schedule(async () => {}, { key: "warm-up" });
  await go();
  const records = [];
  const runs = [];
  for (let i = 0; i < jobs; i++) {
    const priority = Math.floor(random() * 10);
    const ms = 1 + Math.floor(random() * 30);
    const q = Date.now();
    runs.push(
      throttle.schedule(
        async () => {
          const s = Date.now();
          const at = lastAt;
          lastAt = undefined;
          const g = grants.get(at)?.shift();
          await new Promise((r) => setTimeout(r, ms));
          records.push({ m: index, i, p: priority, q, s, e: Date.now(), at, lag: g?.lag, restamped: g === undefined });
        },
        { key: "k", priority },
      ),
    );
  }
  const results = await Promise.allSettled(runs);
  await throttle.close();
  return { records, failed: results.filter((r) => r.status === "rejected").map((r) => String(r.reason)) };
}

/** A member's `go` (forked process or thread alike): tell the parent it is ready, then wait for its word. */
function readyThenGo(post, port) {
  return () =>
    new Promise((resolve) => {
      post({ ready: true });
      port.once("message", resolve);
    });
}

if (role === "child") {
  // A forked member (Redis or a ClusterStore socket).
  const { index, options, jobs, seed, kind, url, prefix, socket } = JSON.parse(process.env.STRESS_ARGS);
  let store;
  let end = async () => {};
  if (kind === "redis") {
    const { Redis } = await import("ioredis");
    const { RedisStore } = await dist("./stores/redis/index.js");
    const client = new Redis(url);
    store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
    end = async () => {
      await store.close();
      client.disconnect();
    };
  } else {
    const { ClusterStore } = await dist("./stores/cluster/index.js");
    store = new ClusterStore({ socket, timeoutMs: 10_000 });
  }
  const out = await member({ store, index, options, jobs, seed, go: readyThenGo((m) => process.send(m), process) });
  await end();
  process.send({ out }, () => process.exit(0));
} else if (role === "thread") {
  const { SharedMemoryStore } = await dist("./stores/threads/index.js");
  const { handle, index, options, jobs, seed } = workerData;
  const store = SharedMemoryStore.attach(handle);
  const out = await member({
    store,
    index,
    options,
    jobs,
    seed,
    go: readyThenGo((m) => parentPort.postMessage(m), parentPort),
  });
  parentPort.postMessage({ out });
} else {
  await main();
}

/** Runs 4 members of `kind` and gathers their records. */
async function fleet(kind, options, jobs, seed) {
  const members = [];
  let dir;
  let handle;
  const prefix = `stress32-${process.pid}-${seed}-${Date.now()}:`;
  const socketKind = kind === "socket" || kind === "socket-parent";
  if (socketKind) dir = mkdtempSync(join(tmpdir(), "stress32-"));
  let parentHost;
  if (kind === "socket-parent") {
    // This process hosts the socket (as the threads' main thread hosts their queue): no member's
    // exit moves the host mid-run.
    const { ClusterStore } = await dist("./stores/cluster/index.js");
    const { createLimiter } = await dist("./index.js");
    parentHost = new ClusterStore({ socket: join(dir, "s.sock"), timeoutMs: 10_000 });
    await createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      { store: parentHost, name: "host" },
    ).tryAcquire("x");
    if (!parentHost.hosting) throw new Error("the parent does not host the socket");
  }
  if (kind === "threads") {
    const { SharedMemoryStore } = await dist("./stores/threads/index.js");
    handle = new SharedMemoryStore({ maxKeys: 1000, recordWords: 40 }).handle;
  }
  const outs = [];
  let ready = 0;
  let resolveAll;
  const all = new Promise((r) => (resolveAll = r));
  const senders = [];
  const hear = (i, m) => {
    if (m.ready && ++ready === 4) for (const s of senders) s({ go: true });
    if (m.out) {
      outs[i] = m.out;
      if (outs.filter(Boolean).length === 4) resolveAll();
    }
  };
  for (let i = 0; i < 4; i++) {
    const args = {
      index: i,
      options,
      jobs,
      seed,
      kind: socketKind ? "socket" : kind,
      url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      prefix,
    };
    if (kind === "threads") {
      const w = new Worker(self, { workerData: { handle, ...args } });
      senders[i] = (m) => w.postMessage(m);
      w.on("message", (m) => hear(i, m));
      w.on("error", (e) => process.stderr.write(`thread ${i}: ${e.stack}\n`));
      members.push(w);
    } else {
      if (socketKind) args.socket = join(dir, "s.sock");
      const c = fork(self, [], { env: { ...process.env, STRESS_ROLE: "child", STRESS_ARGS: JSON.stringify(args) } });
      senders[i] = (m) => c.send(m);
      c.on("message", (m) => hear(i, m));
      members.push(c);
      // The first socket member binds the socket (hosts): the others after it.
      if (kind === "socket" && i === 0) await new Promise((r) => setTimeout(r, 300));
    }
  }
  await all;
  if (kind === "threads") for (const w of members) await w.terminate();
  if (dir) rmSync(dir, { recursive: true, force: true });
  return outs;
}

/** The most items of sorted `ts` in any span of `w` ms (half-open). */
function maxSpan(ts, w) {
  let most = 0;
  let j = 0;
  for (let i = 0; i < ts.length; i++) {
    while (ts[i] - ts[j] >= w) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** Fixed windows over `limit`: [window, count] pairs. */
function overWindows(ts, w, limit) {
  const counts = new Map();
  for (const t of ts) counts.set(Math.floor(t / w), (counts.get(Math.floor(t / w)) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > limit);
}

function analyse(spec, concurrency, records) {
  const w = spec.windowMs;
  const byTask = records.map((r) => r.s).sort((a, b) => a - b);
  const byStore = records.map((r) => r.at ?? r.s).sort((a, b) => a - b);
  const fixed = spec.algorithm === "fixed-window";
  const overTask = fixed ? overWindows(byTask, w, spec.limit) : [];
  const overStore = fixed ? overWindows(byStore, w, spec.limit) : [];
  // Causes of each task-time over-limit window: its starts whose store instant lies in another window.
  const causes = [];
  for (const [win] of overTask) {
    for (const r of records) {
      if (Math.floor(r.s / w) === win && r.at !== undefined && Math.floor(r.at / w) !== win) {
        causes.push({ win, late: r.s - r.at, lag: r.lag, restamped: r.restamped, atInWindow: r.at % w });
      }
    }
  }
  // The most running at once.
  const ev = [];
  for (const r of records) ev.push([r.s, 1], [r.e, -1]);
  ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let run = 0;
  let most = 0;
  for (const [, d] of ev) most = Math.max(most, (run += d));
  const span = byTask[byTask.length - 1] - byTask[0];
  const throughput = ((records.length - 1) / span) * (w / spec.limit);
  const lags = records
    .map((r) => r.lag)
    .filter((x) => x !== undefined)
    .sort((a, b) => a - b);
  const lateStarts = records.map((r) => r.s - (r.at ?? r.s)).sort((a, b) => a - b);
  return {
    overTask: overTask.length,
    overStore: overStore.length,
    maxTaskSpan: maxSpan(byTask, w),
    maxStoreSpan: maxSpan(byStore, w),
    running: most,
    concurrency,
    throughput: Number(throughput.toFixed(3)),
    restamped: records.filter((r) => r.restamped).length,
    lagP50: lags[Math.floor(lags.length / 2)],
    lagMax: lags[lags.length - 1],
    startMinusAtMax: lateStarts[lateStarts.length - 1],
    causes,
  };
}

async function main() {
  const stores = (process.env.STRESS_STORES ?? "redis,threads,socket").split(",");
  const rounds = Number(process.env.STRESS_ROUNDS ?? 3);
  const jobs = Number(process.env.STRESS_JOBS ?? 150);
  const specs = JSON.parse(process.env.STRESS_SPECS ?? '[{"algorithm":"fixed-window","limit":6,"windowMs":200}]');
  const concs = (process.env.STRESS_CONC ?? "3,8").split(",").map(Number);
  let seed = Number(process.env.STRESS_SEED ?? 1);
  const totals = {};
  for (let round = 0; round < rounds; round++) {
    for (const kind of stores) {
      for (const spec of specs) {
        for (const concurrency of concs) {
          seed++;
          const options = { rate: spec, concurrency };
          const outs = await fleet(kind, options, jobs, seed);
          const records = outs.flatMap((o) => o.records);
          const failed = outs.flatMap((o) => o.failed);
          const a = analyse(spec, concurrency, records);
          if (process.env.STRESS_DUMP) {
            const { writeFileSync } = await import("node:fs");
            writeFileSync(`${process.env.STRESS_DUMP}-${kind}-c${concurrency}-${seed}.json`, JSON.stringify(records));
          }
          const name = `${kind} ${spec.algorithm} ${spec.limit}/${spec.windowMs} c${concurrency}`;
          const t = (totals[name] ??= { runs: 0, overTask: 0, overStore: 0, runsOver: 0, throughput: [] });
          t.runs++;
          t.overTask += a.overTask;
          t.overStore += a.overStore;
          if (spec.algorithm === "fixed-window" ? a.overTask > 0 : a.maxTaskSpan > spec.limit) t.runsOver++;
          t.throughput.push(a.throughput);
          const { causes, ...rest } = a;
          console.log(
            JSON.stringify({ name, seed, load: loadavg()[0].toFixed(1), failed: failed.length, ...rest }),
            causes.length > 0 ? `\n  causes ${JSON.stringify(causes)}` : "",
          );
        }
      }
    }
  }
  console.log("totals", JSON.stringify(totals, null, 1));
  // A socket-parent fleet's host (a ClusterStore has no close) would keep this process alive.
  process.exit(0);
}

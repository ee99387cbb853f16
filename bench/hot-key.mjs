// One hot key, in process: every sluice algorithm (on the system clock and on coarseClock) beside
// the Node peers and a bare `Map` floor, measured side by side in one run, interleaved, several
// rounds; the table gives each contender's median ns per decision and its ratio to the floor.
// Each contender runs in a loop compiled for it alone (`new Function`), so no contender pays for a
// call site the others made megamorphic.
// Run with: npm run build && node bench/hot-key.mjs
// BENCH_CALLGRIND=1 counts instructions per decision instead (valgrind; slow, load-independent),
// BENCH_JOBS valgrind processes at a time, with ratios to both floors and to the two peers to beat.
// BENCH_ONLY=gcra,limiter keeps the floors and the contenders whose names hold those words;
// BENCH_BASE_DIST=<dist of another build> adds that build's sluice rows.
// Knobs: BENCH_DECISIONS (default 500,000 per round), BENCH_ROUNDS (default 7),
// BENCH_KEYS (default 1: the hot key; e.g. 100000 for round-robin over that many keys).

import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { MemoryStore as ExpressMemoryStore } from "express-rate-limit";
import { RateLimiter as TokenLimiter } from "limiter";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { coarseClock, createLimiter } from "../dist/index.js";

const require = createRequire(import.meta.url);
const FastifyLocalStore = require("@fastify/rate-limit/store/LocalStore.js");
const Bottleneck = require("bottleneck");

const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 500_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const KEYS = Number(process.env.BENCH_KEYS ?? 1);
const LIMIT = 100;
const keys = KEYS === 1 ? ["hot"] : Array.from({ length: KEYS }, (_, i) => `user:${i}`);

/** The floor: a token bucket in a bare Map that returns the Decision's fields. */
function bareMap(read) {
  const buckets = new Map();
  const full = LIMIT * 1000;
  return (key) => {
    const now = read();
    let b = buckets.get(key);
    if (b === undefined) {
      b = { balance: full, at: now };
      buckets.set(key, b);
    }
    const balance = Math.min(full, b.balance + Math.max(0, now - b.at) * LIMIT);
    const allowed = balance >= 1000;
    if (allowed) {
      b.balance = balance - 1000;
      b.at = Math.max(now, b.at);
    }
    return {
      allowed,
      limit: LIMIT,
      remaining: Math.floor((allowed ? b.balance : balance) / 1000),
      retryAfterMs: allowed ? 0 : Math.ceil((1000 - balance) / LIMIT),
      resetMs: Math.ceil((full - b.balance) / LIMIT),
      delayMs: 0,
    };
  };
}

const SPECS = {
  "fixed-window": { algorithm: "fixed-window", limit: LIMIT, windowMs: 1000 },
  "token-bucket": { algorithm: "token-bucket", capacity: LIMIT, refillPerSecond: LIMIT },
  gcra: { algorithm: "gcra", limit: LIMIT, periodMs: 1000 },
  "sliding-window": { algorithm: "sliding-window", limit: LIMIT, windowMs: 1000 },
  "sliding-log": { algorithm: "sliding-log", limit: LIMIT, windowMs: 1000 },
};

// BENCH_BASE_DIST=<another build's dist>: its sluice rows run beside this build's.
const base = process.env.BENCH_BASE_DIST ? await import(resolve(process.env.BENCH_BASE_DIST, "index.js")) : undefined;

function sluice(spec, coarse, lib = { createLimiter, coarseClock }) {
  const limiter = lib.createLimiter(spec, coarse ? { clock: lib.coarseClock() } : {});
  return (key) => limiter.tryAcquire(key);
}

const contenders = [
  ["bare Map token bucket, Date.now() (floor)", () => bareMap(Date.now), "sync"],
  ["bare Map token bucket, coarseClock (coarse floor)", () => bareMap(coarseClock().now), "sync"],
  ...Object.entries(SPECS).flatMap(([name, spec]) => [
    [`sluice ${name}`, () => sluice(spec, false), "sync"],
    [`sluice ${name}, coarseClock`, () => sluice(spec, true), "sync"],
    ...(base === undefined
      ? []
      : [
          [`base build: sluice ${name}`, () => sluice(spec, false, base), "sync"],
          [`base build: sluice ${name}, coarseClock`, () => sluice(spec, true, base), "sync"],
        ]),
  ]),
  [
    "@fastify/rate-limit LocalStore",
    () => {
      const local = new FastifyLocalStore(false, false, 10_000);
      let out;
      const cb = (_e, r) => {
        out = r.current <= LIMIT;
      };
      return (key) => {
        local.incr(key, cb, 1000, LIMIT);
        return out;
      };
    },
    "sync",
  ],
  [
    "limiter TokenBucket per key",
    () => {
      const buckets = new Map();
      return (key) => {
        let b = buckets.get(key);
        if (b === undefined) {
          b = new TokenLimiter({ tokensPerInterval: LIMIT, interval: "second" });
          buckets.set(key, b);
        }
        return b.tryRemoveTokens(1);
      };
    },
    "sync",
  ],
  [
    "express-rate-limit MemoryStore",
    () => {
      const store = new ExpressMemoryStore();
      store.init({ windowMs: 1000 });
      return (key) => store.increment(key);
    },
    "async",
  ],
  [
    "rate-limiter-flexible Memory",
    () => {
      const rl = new RateLimiterMemory({ points: LIMIT, duration: 1 });
      return (key) => rl.consume(key).catch((r) => r);
    },
    "async",
  ],
  [
    "bottleneck Group reservoir check",
    () => {
      const group = new Bottleneck.Group({ reservoir: LIMIT, maxConcurrent: null });
      return (key) => group.key(key).check();
    },
    "async",
  ],
];

/** A loop of its own per contender: its call site sees one function only. */
function makeLoop(kind) {
  const body =
    kind === "sync"
      ? `let sink = 0; for (let i = 0; i < n; i++) if (decide(keys[i % k])) sink++; return sink;`
      : `return (async () => { let sink = 0; for (let i = 0; i < n; i += 1000) {
           const batch = []; for (let j = i; j < i + 1000; j++) batch.push(decide(keys[j % k]));
           sink += (await Promise.all(batch)).length; } return sink; })();`;
  return new Function("decide", "keys", "k", "n", body);
}

// BENCH_ONLY=<words>: the floors and the contenders whose name holds one of the comma-separated words.
const only = process.env.BENCH_ONLY?.split(",");
if (only !== undefined) {
  for (let c = contenders.length - 1; c >= 2; c--) {
    if (!only.some((w) => contenders[c][0].includes(w))) contenders.splice(c, 1);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (process.argv[2] === "--one") {
  // A child of BENCH_CALLGRIND: one contender, a warm-up, then `n` decisions.
  const c = Number(process.argv[3]);
  const decide = contenders[c][1]();
  const loop = makeLoop(contenders[c][2]);
  const n = Number(process.argv[4]);
  await loop(decide, keys, keys.length, 20_000);
  await loop(decide, keys, keys.length, n);
  // Marks for callgrind (`--dump-before`): what runs between the two calls is 2n warm decisions.
  process.memoryUsage.rss();
  await loop(decide, keys, keys.length, 2 * n);
  process.memoryUsage.rss();
  process.exit(0);
}

if (process.env.BENCH_CALLGRIND === "1") {
  const load = [loadavg()[0]];
  // Instructions per decision, which the machine's load does not move: each contender in a
  // process of its own under valgrind's callgrind (V8 compiling on the main thread).
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { readFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const n = Number(process.env.BENCH_DECISIONS ?? 200_000);
  // One process per contender: a warm-up of 20,000 + N decisions, then 2N decisions between two
  // marks at which callgrind dumps its counts (`--dump-before` a Node function called only there),
  // so the middle part holds the 2N decisions alone (start-up and warm-up fall in the first).
  const count = async (c) => {
    const out = `${tmpdir()}/sluice-hot-key-${process.pid}-${c}.cg`;
    const log = `${out}.log`;
    await promisify(execFile)("valgrind", [
      "--tool=callgrind",
      "--dump-before=*node*Rss*",
      `--callgrind-out-file=${out}`,
      `--log-file=${log}`,
      process.execPath,
      "--single-threaded",
      process.argv[1],
      "--one",
      String(c),
      String(n),
    ]);
    const measured = Number(/^summary: (\d+)/m.exec(readFileSync(`${out}.2`, "utf8"))?.[1]);
    for (const f of [out, `${out}.1`, `${out}.2`, log]) rmSync(f, { force: true });
    return measured / (2 * n);
  };
  // BENCH_JOBS valgrind processes at a time (default 2): counts do not depend on what runs beside.
  const jobs = Number(process.env.BENCH_JOBS ?? 2);
  const per = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      while (next < contenders.length) {
        const c = next++;
        per[c] = await count(c);
        console.error(`${contenders[c][0]}: ${per[c].toFixed(0)}`);
      }
    }),
  );
  load.push(loadavg()[0]);
  // The two peers the hot key must beat, when they ran (BENCH_ONLY may leave them out).
  const peer = (name) => per[contenders.findIndex(([n]) => n.startsWith(name))];
  const fastify = peer("@fastify/rate-limit");
  const limiter = peer("limiter TokenBucket");
  const ratio = (x, of) => (of === undefined ? "" : (x / of).toFixed(2));
  console.log(
    `${KEYS === 1 ? "one hot key" : `${KEYS} keys round-robin`}: instructions per decision (callgrind, ${2 * n} warm decisions each), ${new Date().toISOString().slice(0, 10)}, load average ${load.map((x) => x.toFixed(2)).join(" → ")}`,
  );
  console.table(
    contenders.map(([name], c) => ({
      contender: name,
      "instructions/decision": per[c].toFixed(0),
      "× floor": ratio(per[c], per[0]),
      "× coarse floor": ratio(per[c], per[1]),
      "× @fastify LocalStore": ratio(per[c], fastify),
      "× limiter": ratio(per[c], limiter),
    })),
  );
  process.exit(0);
}

const loops = contenders.map(([, , kind]) => makeLoop(kind));
const samples = contenders.map(() => []);
const load = [loadavg()[0]];
for (let round = 0; round < ROUNDS; round++) {
  // A rotating order, so drift on a noisy machine hits every contender alike.
  for (let j = 0; j < contenders.length; j++) {
    const c = (j + round) % contenders.length;
    const decide = contenders[c][1]();
    await loops[c](decide, keys, keys.length, 20_000); // warm-up, then the measured run on the same instance
    const t0 = performance.now();
    await loops[c](decide, keys, keys.length, DECISIONS);
    samples[c].push(((performance.now() - t0) * 1e6) / DECISIONS);
  }
}
load.push(loadavg()[0]);
const floor = median(samples[0]);
const coarseFloor = median(samples[1]);
console.log(
  `${KEYS === 1 ? "one hot key" : `${KEYS} keys round-robin`}: ${DECISIONS} decisions × ${ROUNDS} rounds, load average ${load.map((x) => x.toFixed(2)).join(" → ")}`,
);
console.table(
  contenders.map(([name], c) => {
    const ns = median(samples[c]);
    return {
      contender: name,
      "ns/decision (median)": ns.toFixed(1),
      "min…max": `${Math.min(...samples[c]).toFixed(1)}…${Math.max(...samples[c]).toFixed(1)}`,
      "× floor": (ns / floor).toFixed(2),
      "− coarse floor (ns)": (ns - coarseFloor).toFixed(1),
    };
  }),
);

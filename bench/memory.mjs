// In-process benchmark: sluice's token bucket (uncapped, and capped at 10,000 exact keys) beside a
// bare Map token bucket (the floor), @fastify/rate-limit's LRU store, rate-limiter-flexible's
// RateLimiterMemory and `limiter`, measured side by side in one run;
// then the floods of docs/semantics.md §10 beside a bare Map, @fastify/rate-limit's LRU and
// rate-limiter-flexible (decisions/s, bytes held, keys that got past their limit) with the
// capped store's bytes per key in each tier. BENCH_FLOOD sets the flood size.
// Run with: npm run bench   (or: npm run build && node --expose-gc bench/memory.mjs)
// The restore shape alone (snapshot + restore past maxKeys, issue 34):
//   npm run build && node --expose-gc bench/memory.mjs --restore [flood keys, default BENCH_FLOOD / 5]
// Floods past the cliff (issue 34), per shape: honest refusals and escapes against an uncapped
// store, heap growth, ns per decision beside the uncapped store's:
//   npm run build && node --expose-gc bench/memory.mjs --shapes [algorithm:keys:perKey[:rules[:restart[:maxKeys]]]] ...]
// (`restart`: the capped store is snapshotted and restored into a new one halfway through the flood;
// `larger`: into one of 100 × maxKeys; `uncapped`: into an uncapped one. Algorithms include the
// composites `fw+gcra` and `tb+sw`).
// BENCH_RETURNING / BENCH_FRESH set a shape's returning and brand-new keys (default 1,000 and 10,000):
// with maxKeys 1,000 and a tenth of each, a many-rules cell reproduces its full size's refusals in
// seconds (500 rules: `BENCH_RETURNING=100 BENCH_FRESH=1000 ... --shapes fixed-window:500:1:500::1000`).
// Every algorithm × every shape, with and without a restart, the cells over 1% flagged:
//   npm run build && node --expose-gc bench/memory.mjs --sweep [regex of the cells to run]

import { RateLimiter as TokenLimiter } from "limiter";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { coarseClock, createLimiter, MemoryStore, systemClock } from "../dist/index.js";

const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 1_000_000);
const KEYS = 100_000;
const REPS = Number(process.env.BENCH_REPS ?? 5);
const CAPACITY = 100;
const RATE = 100; // tokens per second per key: a busy per-user API limit (the hot key ends up mostly denied)
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

/**
 * The floor: the least a per-key token bucket can do and still answer what sluice answers —
 * read the clock, get, refill, spend, and return the same Decision fields (limit, remaining,
 * retry and reset hints), with none of sluice's validation, float-noise guards or expiry.
 */
function bareMapBucket(read = Date.now) {
  const buckets = new Map();
  const full = CAPACITY * 1000;
  return (key) => {
    const now = read();
    let b = buckets.get(key);
    if (b === undefined) {
      b = { balance: full, at: now };
      buckets.set(key, b);
    }
    const balance = Math.min(full, b.balance + Math.max(0, now - b.at) * RATE);
    if (balance >= 1000) {
      b.balance = balance - 1000;
      b.at = Math.max(now, b.at);
      const resetMs = Math.ceil((full - b.balance) / RATE);
      return {
        allowed: true,
        limit: CAPACITY,
        remaining: Math.floor(b.balance / 1000),
        retryAfterMs: 0,
        resetMs,
        delayMs: 0,
      };
    }
    const retryAfterMs = Math.ceil((1000 - balance) / RATE);
    const resetMs = Math.ceil((full - balance) / RATE);
    return {
      allowed: false,
      limit: CAPACITY,
      remaining: Math.floor(balance / 1000),
      retryAfterMs,
      resetMs,
      delayMs: 0,
    };
  };
}

function sluiceBucket() {
  const limiter = createLimiter({ algorithm: "token-bucket", capacity: CAPACITY, refillPerSecond: RATE });
  return (key) => limiter.tryAcquire(key);
}

/** The floor with the clock read taken out: the same bucket on a coarse clock's cached reading. */
function bareMapCoarse() {
  const clock = coarseClock();
  return bareMapBucket(clock.now);
}

function sluiceCoarse() {
  const clock = coarseClock();
  const limiter = createLimiter({ algorithm: "token-bucket", capacity: CAPACITY, refillPerSecond: RATE }, { clock });
  return (key) => limiter.tryAcquire(key);
}

function sluiceCapped() {
  // The capped store: a hot key lives in the protected segment; 100k keys churn through all three tiers.
  const store = new MemoryStore({ maxKeys: 10_000 });
  const limiter = createLimiter({ algorithm: "token-bucket", capacity: CAPACITY, refillPerSecond: RATE }, { store });
  return (key) => limiter.tryAcquire(key);
}

let FastifyLocalStore;
function fastifyLru() {
  // @fastify/rate-limit's in-process store: a fixed window per key in an LRU of 10,000 (its default 5,000 raised to match).
  const local = new FastifyLocalStore(false, false, 10_000);
  return (key) => {
    let out;
    local.incr(key, (_e, r) => (out = r.current <= CAPACITY), 1000, CAPACITY);
    return out;
  };
}

function limiterPackage() {
  const buckets = new Map();
  return (key) => {
    let b = buckets.get(key);
    if (b === undefined) {
      b = new TokenLimiter({ tokensPerInterval: RATE, interval: "second" });
      buckets.set(key, b);
    }
    return b.tryRemoveTokens(1);
  };
}

function flexible() {
  // rate-limiter-flexible counts fixed windows and answers with promises.
  const rl = new RateLimiterMemory({ points: CAPACITY, duration: 1 });
  return (key) => rl.consume(key).catch((r) => r);
}

const contenders = [
  ["bare Map token bucket (floor)", bareMapBucket, false],
  ["sluice token-bucket", sluiceBucket, false],
  ["bare Map token bucket, coarseClock", bareMapCoarse, false],
  ["sluice token-bucket, coarseClock", sluiceCoarse, false],
  ["sluice token-bucket, maxKeys 10k", sluiceCapped, false],
  ["@fastify/rate-limit LRU 10k", fastifyLru, false],
  ["limiter (TokenBucket per key)", limiterPackage, false],
  ["rate-limiter-flexible Memory", flexible, true],
];

async function time(make, isAsync, pickKey) {
  const decide = make();
  let sink = 0;
  const start = performance.now();
  if (isAsync) {
    // Batches of 1000 in flight: what a busy server does; awaiting each one alone would be slower.
    for (let i = 0; i < DECISIONS; i += 1000) {
      const batch = [];
      for (let j = i; j < i + 1000; j++) batch.push(decide(pickKey(j)));
      const results = await Promise.all(batch);
      sink += results.length;
    }
  } else {
    for (let i = 0; i < DECISIONS; i++) if (decide(pickKey(i))) sink++;
  }
  const ns = ((performance.now() - start) * 1e6) / DECISIONS;
  if (sink < 0) console.log(sink);
  return ns;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function speed() {
  const workloads = [
    ["one hot key", () => "hot"],
    [`${KEYS / 1000}k keys round-robin`, (i) => keys[i % KEYS]],
  ];
  const rows = [];
  for (const [wname, pickKey] of workloads) {
    const samples = new Map(contenders.map(([name]) => [name, []]));
    for (let rep = 0; rep < REPS; rep++) {
      // Interleaved so drift on a noisy machine hits every contender alike.
      for (const [name, make, isAsync] of contenders) samples.get(name).push(await time(make, isAsync, pickKey));
    }
    const floor = median(samples.get(contenders[0][0]));
    const ours = median(samples.get("sluice token-bucket"));
    for (const [name] of contenders) {
      const ns = median(samples.get(name));
      rows.push({
        workload: wname,
        contender: name,
        "ns/decision": ns.toFixed(0),
        "× floor": (ns / floor).toFixed(2),
        "× sluice": (ns / ours).toFixed(2),
      });
    }
  }
  console.table(rows);
}

function clockCost() {
  const N = 5_000_000;
  const sources = [
    ["Date.now()", () => Date.now()],
    ["performance.now()", () => performance.now()],
    ["sluice systemClock.now()", () => systemClock.now()],
    ["sluice coarseClock().now()", coarseClock().now],
  ];
  const rows = [];
  for (const [name, read] of sources) {
    const xs = [];
    for (let rep = 0; rep < 3; rep++) {
      let s = 0;
      const t0 = performance.now();
      for (let i = 0; i < N; i++) s += read();
      xs.push(((performance.now() - t0) * 1e6) / N);
      if (s === 0) console.log(s);
    }
    rows.push({ source: name, "ns/read": median(xs).toFixed(1) });
  }
  console.table(rows);
}

function heapUsed() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

const LIVE_SPECS = {
  "token-bucket": { algorithm: "token-bucket", capacity: 10, refillPerSecond: 1 },
  gcra: { algorithm: "gcra", limit: 10, periodMs: 10_000 },
  "fixed-window": { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
  "sliding-window": { algorithm: "sliding-window", limit: 10, windowMs: 60_000 },
  "leaky-bucket": { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 1 },
  "sliding-log": { algorithm: "sliding-log", limit: 10, windowMs: 60_000 },
};

/** Child process: hold N live keys of one contender and print the heap growth per key. */
function measureLiveKeys(which) {
  const N = Number(process.env.BENCH_LIVE_KEYS ?? 1_000_000);
  const names = Array.from({ length: N }, (_, i) => `user:${i}`);
  const before = heapUsed();
  let held;
  if (which === "bare-map") {
    held = bareMapBucket();
    for (const k of names) held(k);
  } else {
    held = createLimiter(LIVE_SPECS[which]);
    for (const k of names) held.tryAcquire(k);
  }
  const bytes = (heapUsed() - before) / N;
  console.log(JSON.stringify({ which, bytes, live: held !== undefined }));
}

async function bytesPerKey() {
  const { execFileSync } = await import("node:child_process");
  const N = Number(process.env.BENCH_LIVE_KEYS ?? 1_000_000);
  const rows = [];
  // Each contender in its own process, so nothing another one left behind is counted or freed.
  for (const which of ["bare-map", ...Object.keys(LIVE_SPECS)]) {
    const out = execFileSync(process.execPath, ["--expose-gc", process.argv[1], "--live-keys", which], {
      encoding: "utf8",
    });
    const { bytes } = JSON.parse(out.trim().split("\n").pop());
    const label = which === "bare-map" ? "bare Map token bucket (floor)" : `sluice ${which}`;
    rows.push({ store: label, "bytes/key": bytes.toFixed(0) });
  }
  console.log(
    `\nHeap per live key at ${N.toLocaleString("en")} live keys (key strings excluded: they exist either way)`,
  );
  console.table(rows);
}

/** Heap and typed arrays' buffers (sluice's compact tier lives in one ArrayBuffer), after a full collection. */
function held() {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const HOUR = 3_600_000;

/** The floor for a fixed window: a bare Map of { window, count }, no cap, no validation. */
function bareMapWindow() {
  const windows = new Map();
  return (key) => {
    const now = Date.now();
    const w = now - (now % HOUR);
    let r = windows.get(key);
    if (r === undefined) {
      r = { w, c: 0 };
      windows.set(key, r);
    } else if (r.w !== w) {
      r.w = w;
      r.c = 0;
    }
    if (r.c + 1 > 10)
      return {
        allowed: false,
        limit: 10,
        remaining: 0,
        retryAfterMs: w + HOUR - now,
        resetMs: w + HOUR - now,
        delayMs: 0,
      };
    r.c++;
    return { allowed: true, limit: 10, remaining: 10 - r.c, retryAfterMs: 0, resetMs: w + HOUR - now, delayMs: 0 };
  };
}

/**
 * Child process: one flood (docs/semantics.md §10) through one contender, 10 per hour per key:
 * `one-shot` sends one request from each of BENCH_FLOOD (1,000,000) new keys; `full-limit` sends
 * 11 requests from each of BENCH_FLOOD/5 keys (each spends its whole limit, then one more).
 * Prints decisions per second, the bytes held afterwards, and how many keys passed their limit
 * (a cap that forgets keys lets them start over). sluice is capped at 10,000 exact keys;
 * @fastify/rate-limit's LRU holds 10,000 too; the bare Map and rate-limiter-flexible grow.
 */
async function measureFlood(which, scenario) {
  const N = Number(process.env.BENCH_FLOOD ?? 1_000_000);
  const keys = scenario === "one-shot" ? N : N / 5;
  const per = scenario === "one-shot" ? 1 : 11;
  const names = Array.from({ length: keys }, (_, i) => `bot:${i}`);
  const before = held();
  let check;
  let store;
  if (which === "bare Map (floor)") check = bareMapWindow();
  else if (which === "rate-limiter-flexible") {
    const rl = new RateLimiterMemory({ points: 10, duration: 3600 });
    check = (key) =>
      rl.consume(key).then(
        () => ({ allowed: true }),
        () => ({ allowed: false }),
      );
  } else if (which === "@fastify/rate-limit LRU 10k") {
    const { default: LocalStore } = await import("@fastify/rate-limit/store/LocalStore.js");
    const local = new LocalStore(false, false, 10_000);
    check = (key) => {
      let out;
      local.incr(key, (_e, r) => (out = { allowed: r.current <= 10 }), HOUR, 10);
      return out;
    };
  } else {
    store = new MemoryStore({ maxKeys: 10_000 });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 10, windowMs: HOUR }, { store });
    check = (key) => limiter.tryAcquire(key);
  }
  const isAsync = which === "rate-limiter-flexible";
  let over = 0;
  const t0 = performance.now();
  for (const k of names) {
    let passed = 0;
    for (let r = 0; r < per; r++) {
      const d = isAsync ? await check(k) : check(k);
      if (d.allowed) passed++;
    }
    if (passed > 10) over++;
  }
  const seconds = (performance.now() - t0) / 1000;
  const bytes = held() - before;
  // The key names were allocated before `before`, and the contender's state must outlive the
  // measure: both are used after it, or their collection would count as memory given back.
  if (names.length !== keys || typeof check !== "function") throw new Error("unreachable");
  console.log(
    JSON.stringify({ which, perSecond: (keys * per) / seconds, heldMB: bytes / 2 ** 20, over, stats: store?.stats() }),
  );
}

async function flood() {
  const { execFileSync } = await import("node:child_process");
  const N = Number(process.env.BENCH_FLOOD ?? 1_000_000);
  const contenders = [
    "sluice MemoryStore maxKeys 10k",
    "bare Map (floor)",
    "@fastify/rate-limit LRU 10k",
    "rate-limiter-flexible",
  ];
  for (const scenario of ["one-shot", "full-limit"]) {
    const rows = [];
    let floor = 0;
    let tiers;
    for (const which of contenders) {
      const out = execFileSync(process.execPath, ["--expose-gc", process.argv[1], "--flood", which, scenario], {
        encoding: "utf8",
        maxBuffer: 1 << 24,
      });
      const r = JSON.parse(out.trim().split("\n").pop());
      if (which === "bare Map (floor)") floor = r.perSecond;
      if (r.stats !== undefined) tiers = r.stats;
      rows.push({
        contender: which,
        perSecond: r.perSecond,
        "held (MB)": r.heldMB.toFixed(1),
        "keys past their limit": r.over,
      });
    }
    for (const row of rows) {
      row["decisions/s"] = Math.round(row.perSecond).toLocaleString("en");
      row["× bare Map"] = (row.perSecond / floor).toFixed(2);
      delete row.perSecond;
    }
    const what =
      scenario === "one-shot"
        ? `${N.toLocaleString("en")} new keys, one request each`
        : `${(N / 5).toLocaleString("en")} new keys, 11 requests each`;
    console.log(`\nFlood: ${what}; fixed window 10 per hour`);
    console.table(rows);
    if (tiers !== undefined) {
      console.log(
        `sluice tiers: map ${tiers.keys} keys (${tiers.protectedKeys} protected; heap per key: the live-keys table); compact ${tiers.compactKeys}/${tiers.compactCapacity} keys in ${(tiers.compactBytes / 2 ** 20).toFixed(1)} MB = ${(tiers.compactBytes / tiers.compactCapacity).toFixed(3)} bytes/slot, ${(tiers.compactBytes / Math.max(1, tiers.compactKeys)).toFixed(2)} bytes/key held; summary ${(tiers.sketchBytes / 2 ** 20).toFixed(1)} MB (${tiers.summarised} records added, error bound ${tiers.summaryErrorBound.toFixed(3)}); approximate decisions ${tiers.approximate}, of which refused ${tiers.refused}`,
      );
    }
  }
}

/**
 * The restore shape (docs/semantics.md §10, issue 34): a capped store past `maxKeys` is saved
 * (`snapshot`) and read into a new store (`restore`), as `sluice serve --state` does across a
 * restart; then returning keys finish their limit, flood keys try once more and brand-new keys
 * send one request each. Every decision is compared with an uncapped store fed the same trace
 * (an honest refusal: the capped store refuses what the uncapped one admits; an escape: the
 * other way round), for the restarted store and for the same store without the restart.
 * `node --expose-gc bench/memory.mjs --restore [flood]` (default BENCH_FLOOD / 5 = 200,000 keys).
 */
async function restoreShape() {
  const { ManualClock, RateLimiterService } = await import("../dist/index.js");
  const specs = {
    "fixed-window": { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
    "sliding-window": { algorithm: "sliding-window", limit: 10, windowMs: HOUR },
    "token-bucket": { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
    gcra: { algorithm: "gcra", limit: 10, periodMs: HOUR },
    "leaky-bucket": { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 3600 },
    "sliding-log": { algorithm: "sliding-log", limit: 10, windowMs: HOUR },
  };
  const shapes = [
    {
      name: "maxKeys 10,000; 1,000 keys using 5 of 10; flood",
      maxKeys: 10_000,
      returning: 1000,
      used: 5,
      flood: Number(process.argv[3] ?? Number(process.env.BENCH_FLOOD ?? 1_000_000) / 5),
      fresh: 10_000,
    },
    { name: "maxKeys 100; 1,000 keys using 1 of 10", maxKeys: 100, returning: 1000, used: 1, flood: 0, fresh: 100 },
  ];
  const rows = [];
  for (const shape of shapes) {
    for (const [algorithm, spec] of Object.entries(specs)) {
      const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
      const capped = new MemoryStore({ maxKeys: shape.maxKeys, seed: 7 });
      const a = new RateLimiterService({ clock, store: capped }).addRule("r", spec);
      const u = new RateLimiterService({ clock }).addRule("r", spec);
      const both = (key) => [a.check("r", key).allowed, u.check("r", key).allowed];
      for (let i = 0; i < shape.returning; i++) for (let j = 0; j < shape.used; j++) both(`user:${i}`);
      clock.advance(1000);
      for (let i = 0; i < shape.flood; i++) for (let j = 0; j < 10; j++) both(`bot:${i}`);
      clock.advance(1000);
      const t0 = performance.now();
      const text = capped.snapshot(clock.now());
      const restoredStore = new MemoryStore({ maxKeys: shape.maxKeys });
      restoredStore.restore(text);
      const ms = performance.now() - t0;
      const b = new RateLimiterService({ clock, store: restoredStore }).addRule("r", spec);
      const tally = { restarted: { returning: 0, fresh: 0, escapes: 0 }, kept: { returning: 0, fresh: 0, escapes: 0 } };
      let returning = 0;
      const count = (kind, key) => {
        const want = u.check("r", key).allowed;
        for (const [which, s] of [
          ["restarted", b],
          ["kept", a],
        ]) {
          const got = s.check("r", key).allowed;
          if (!got && want) tally[which][kind]++;
          if (got && !want) tally[which].escapes++;
        }
      };
      for (let i = 0; i < shape.returning; i++) {
        for (let j = shape.used; j < 10; j++) {
          count("returning", `user:${i}`);
          returning++;
        }
      }
      for (let i = 0; i < Math.min(shape.flood, 10_000); i++) count("returning", `bot:${i}`);
      for (let i = 0; i < shape.fresh; i++) count("fresh", `new:${i}`);
      const pct = (n, of) => `${((100 * n) / of).toFixed(2)}% (${n})`;
      rows.push({
        shape: shape.name + (shape.flood > 0 ? ` of ${shape.flood.toLocaleString("en")} keys × 10` : ""),
        algorithm,
        "returning refused, restarted": pct(tally.restarted.returning, returning),
        "new refused, restarted": pct(tally.restarted.fresh, shape.fresh),
        "returning refused, no restart": pct(tally.kept.returning, returning),
        "new refused, no restart": pct(tally.kept.fresh, shape.fresh),
        escapes: tally.restarted.escapes + tally.kept.escapes,
        "state MB": (text.length / 2 ** 20).toFixed(1),
        "save+restore ms": Math.round(ms),
      });
    }
  }
  console.log(
    "\nRestore shape: honest refusals after snapshot + restore, against an uncapped store fed the same trace",
  );
  console.table(rows);
}

const SHAPE_SPECS = {
  "fixed-window": { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
  "sliding-window": { algorithm: "sliding-window", limit: 10, windowMs: HOUR },
  "token-bucket": { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
  gcra: { algorithm: "gcra", limit: 10, periodMs: HOUR },
  "leaky-bucket": { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 3600 },
  "sliding-log": { algorithm: "sliding-log", limit: 10, windowMs: HOUR },
  concurrency: { algorithm: "concurrency", limit: 10, leaseMs: HOUR },
  // Composites (issue 34, attack finding 1: they went straight to the summary).
  "fw+gcra": [
    { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
    { algorithm: "gcra", limit: 20, periodMs: HOUR },
  ],
  "tb+sw": [
    { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
    { algorithm: "sliding-window", limit: 20, windowMs: 2 * HOUR },
  ],
};

/**
 * The store a restart restores into: `restart` the same options; `larger` 100 × maxKeys (what
 * SLUICE_STORE_SATURATED tells an operator to do, then `--state`); `uncapped` none (attack
 * finding 2: compact records were summarised into the saved, narrow summary).
 */
function restartStore(mode, maxKeys) {
  if (mode === "larger") return new MemoryStore({ maxKeys: maxKeys * 100 });
  if (mode === "uncapped") return new MemoryStore();
  return new MemoryStore({ maxKeys });
}

/**
 * Child process: one flood shape through `MemoryStore({ maxKeys })` (10,000 unless given; default budget,
 * seed 14), or through an uncapped store (`capped` false: for its ns per decision only).
 * `keys` new keys each send `per` requests (and one more when per > 1) through each of `rules`
 * rules within one window; 1,000 returning keys send one request at each fifth of the flood, and
 * 10,000 brand-new keys one after it. Returning and brand-new keys are asked of an uncapped
 * store too (keys are independent, so it needs no flood): an honest refusal is one it admits and
 * the capped store refuses; an escape, the other way round, or a flood key admitted past 10.
 */
/** Returning keys and brand-new keys of a shape (BENCH_RETURNING, BENCH_FRESH: smaller for quick runs of many rules). */
const RETURNING_KEYS = Number(process.env.BENCH_RETURNING ?? 1000);
const FRESH_KEYS = Number(process.env.BENCH_FRESH ?? 10_000);

async function measureShape(algorithm, keys, per, nRules, capped, restart, maxKeys = 10_000) {
  const { ManualClock } = await import("../dist/index.js");
  const clock = new ManualClock(1_800_000_000_000 - (1_800_000_000_000 % HOUR) + 1);
  const make = (store) =>
    Array.from({ length: nRules }, (_, i) => createLimiter(SHAPE_SPECS[algorithm], { clock, store, name: `r${i}` }));
  const free = make(new MemoryStore());
  const before = held();
  let store = capped ? new MemoryStore({ maxKeys, seed: 14 }) : new MemoryStore();
  let limiters = make(store);
  const t = {
    honest: 0,
    refused: 0,
    escapes: 0,
    first: 0,
    returning: 0,
    returningRefused: 0,
    fresh: 0,
    freshRefused: 0,
  };
  const ask = (key, kind) => {
    for (let r = 0; r < nRules; r++) {
      const want = free[r].tryAcquire(key).allowed;
      const got = limiters[r].tryAcquire(key).allowed;
      if (want) {
        t.honest++;
        t[kind]++;
      }
      if (want && !got) {
        t.refused++;
        t[`${kind}Refused`]++;
      }
      if (got && !want) t.escapes++;
    }
  };
  const step = Math.floor(keys / 5);
  let ms = 0;
  for (let k = 0; k < keys; k++) {
    if (k % step === 0) for (let g = 0; g < RETURNING_KEYS; g++) ask(`good${g}`, "returning");
    if (restart && k === Math.floor(keys / 2)) {
      // A restart in the middle (`sluice serve --state`): the state as text, into a new store.
      const text = store.snapshot(clock.now());
      store = capped ? restartStore(restart, maxKeys) : new MemoryStore();
      store.restore(text);
      limiters = make(store);
    }
    const key = `new${k}`;
    const t0 = performance.now();
    for (let r = 0; r < nRules; r++) {
      const limiter = limiters[r];
      let n = 0;
      for (let j = 0; j < per; j++) {
        if (limiter.tryAcquire(key).allowed) n++;
        else if (j === 0) t.first++;
      }
      if (per > 1 && limiter.tryAcquire(key).allowed) n++;
      if (n > 10) t.escapes++;
    }
    ms += performance.now() - t0;
    if (k % 65536 === 0) clock.advance(1);
  }
  clock.advance(1000);
  for (let i = 0; i < FRESH_KEYS; i++) ask(`fresh${i}`, "fresh");
  const grown = held() - before;
  const decisions = keys * nRules * (per + (per > 1 ? 1 : 0));
  if (free.length !== nRules) throw new Error("unreachable"); // the oracle outlives the measure
  console.log(JSON.stringify({ ...t, ns: (ms * 1e6) / decisions, heldMB: grown / 2 ** 20, stats: store.stats() }));
}

async function shapes() {
  const asked = process.argv.slice(3);
  const list =
    asked.length > 0
      ? asked
      : [
          "fixed-window:1000000:1",
          "fixed-window:1500000:1",
          "fixed-window:3000000:1",
          "gcra:3000000:1",
          "sliding-log:200000:10",
          "sliding-log:600000:10",
          "concurrency:600000:10",
          "token-bucket:600000:10",
          "fixed-window:5000:1:1",
          "fixed-window:5000:1:200",
          "fixed-window:15000:1:200",
          "fixed-window:5000:1:500",
          "fixed-window:60000:1:50",
          "gcra:15000:1:200",
          "token-bucket:15000:1:200",
          "sliding-log:3000:10:200",
          "fixed-window:15000:1:200:restart",
          "fw+gcra:1000000:1",
          "tb+sw:1000000:1",
          "fixed-window:50000:1:1:larger:500",
          "fw+gcra:50000:1:1:uncapped:500",
        ];
  const rows = [];
  for (const shape of list) {
    const [algorithm, keys, per, rules = "1", restart = "", maxKeys = ""] = shape.split(":");
    const c = await runShape(shape, true);
    const u = await runShape(shape, false);
    const s = c.stats;
    const pct = (n, of) => `${((100 * n) / Math.max(1, of)).toFixed(2)}%`;
    rows.push({
      shape: `${algorithm} ${Number(keys).toLocaleString("en")} keys × ${per}${rules === "1" ? "" : `, ${rules} rules`}${restart === "restart" ? ", restart midway" : restart === "" ? "" : `, restart midway into a ${restart} store`}${maxKeys === "" ? "" : `, maxKeys ${maxKeys}`}`,
      "honest refused": `${pct(c.refused, c.honest)} (${c.refused}/${c.honest})`,
      "returning / new refused": `${pct(c.returningRefused, c.returning)} / ${pct(c.freshRefused, c.fresh)}`,
      "first requests refused": pct(c.first, Number(keys) * Number(rules)),
      escapes: c.escapes,
      "tiers MB": ((s.compactBytes + s.sketchBytes + s.filterBytes) / 2 ** 20).toFixed(1),
      "heap MB (with oracle)": c.heldMB.toFixed(1),
      "uncapped heap MB": u.heldMB.toFixed(1),
      "ns/decision": Math.round(c.ns),
      "uncapped ns": Math.round(u.ns),
      "compact keys": `${s.compactKeys}/${s.compactCapacity}`,
      "filter keys": s.filterKeys,
      "error bound": s.summaryErrorBound.toExponential(1),
    });
  }
  console.log(
    "\nFloods past maxKeys 10,000 (default budget, 24 MiB), against an uncapped store fed the same honest keys",
  );
  console.table(rows);
}

/** One child run of `measureShape`, parsed (`capped` false: the uncapped store, for its cost). */
async function runShape(shape, capped) {
  const { execFile } = await import("node:child_process");
  const [algorithm, keys, per, rules = "1", restart = "", maxKeys = "10000"] = shape.split(":");
  const args = [process.argv[1], "--shape", algorithm, keys, per, rules, capped ? "capped" : "free", restart, maxKeys];
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ["--expose-gc", ...args], { encoding: "utf8", maxBuffer: 1 << 24 }, (e, out) =>
      e ? reject(e) : resolve(JSON.parse(out.trim().split("\n").pop())),
    ),
  );
}

/** The shapes of the sweep for one algorithm (issue 34: every algorithm, 3× past the documented sizes). */
function sweepShapes(algorithm) {
  const base = [
    `${algorithm}:3000000:1`, // one-shot flood, 3× the documented 1,000,000
    `${algorithm}:600000:10`, // whole-limit flood, 3× the documented 200,000
    `${algorithm}:15000:1:200`,
    `${algorithm}:5000:1:500`,
    `${algorithm}:2000:1:1000`,
    `${algorithm}:30000:1:1::100`, // maxKeys 100: 300 × maxKeys one-shot keys
    `${algorithm}:3000000:1:1::1000000`, // maxKeys 1,000,000 at the default (24 MiB) budget
  ];
  return base.flatMap((shape) => {
    const [a, k, p, r = "1", , m = ""] = shape.split(":");
    // A restart into the same options, and (one-rule shapes) into a store of 100 × maxKeys.
    const restarts = [`${a}:${k}:${p}:${r}:restart:${m}`];
    if (r === "1") restarts.push(`${a}:${k}:${p}:${r}:larger:${m}`);
    return [shape, ...restarts];
  });
}

/**
 * The sweep (issue 34's "build for the class"): every algorithm × every flood shape × with and
 * without a restart mid-flood, capped store only (BENCH_SWEEP_UNCAPPED=1 adds the uncapped cost).
 * `node --expose-gc bench/memory.mjs --sweep [regex]` runs the cells whose shape matches; each
 * result is appended as a JSON line to BENCH_SWEEP_OUT (default /tmp/sluice-sweep.jsonl), cells
 * over 1% honest refusal (returning or new) or with an escape are flagged. BENCH_SWEEP_JOBS
 * (default 1) runs that many cells side by side (ns per decision then means less).
 */
async function sweep() {
  const { appendFileSync } = await import("node:fs");
  const out = process.env.BENCH_SWEEP_OUT ?? "/tmp/sluice-sweep.jsonl";
  const match = new RegExp(process.argv[3] ?? ".");
  const algorithms = [
    "fixed-window",
    "sliding-window",
    "sliding-log",
    "token-bucket",
    "gcra",
    "leaky-bucket",
    "concurrency",
    "fw+gcra",
    "tb+sw",
  ];
  const cells = algorithms.flatMap(sweepShapes).filter((shape) => match.test(shape));
  const jobs = Number(process.env.BENCH_SWEEP_JOBS ?? 1);
  const rows = [];
  let next = 0;
  const pct = (n, of) => (100 * n) / Math.max(1, of);
  const worker = async () => {
    while (next < cells.length) {
      const shape = cells[next++];
      const t0 = performance.now();
      const c = await runShape(shape, true);
      const u = process.env.BENCH_SWEEP_UNCAPPED === "1" ? await runShape(shape, false) : undefined;
      const s = c.stats;
      const row = {
        shape,
        returning: Number(pct(c.returningRefused, c.returning).toFixed(2)),
        new: Number(pct(c.freshRefused, c.fresh).toFixed(2)),
        escapes: c.escapes,
        "heap MB": Number(c.heldMB.toFixed(1)),
        ns: Math.round(c.ns),
        "uncapped ns": u === undefined ? "" : Math.round(u.ns),
        bound: Number(s.summaryErrorBound.toExponential(1)),
        compact: `${s.compactKeys}/${s.compactCapacity}`,
        s: Math.round((performance.now() - t0) / 1000),
      };
      row.over = row.returning > 1 || row.new > 1 || row.escapes > 0 ? "OVER" : "";
      appendFileSync(
        out,
        `${JSON.stringify({ ...row, load: (await import("node:os")).loadavg()[0], at: new Date().toISOString() })}\n`,
      );
      console.log(JSON.stringify(row));
      rows.push(row);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  rows.sort((a, b) => cells.indexOf(a.shape) - cells.indexOf(b.shape));
  console.log("\nSweep: shape = algorithm:keys:per key:rules:restart:maxKeys (default maxKeys 10,000, budget 24 MiB)");
  console.table(rows);
  const over = rows.filter((r) => r.over !== "");
  console.log(`${over.length} of ${rows.length} cells over 1% or with escapes: ${over.map((r) => r.shape).join(" ")}`);
}

if (process.argv[2] === "--shape") {
  const [algorithm, keys, per, rules, which, restart, maxKeys] = process.argv.slice(3);
  await measureShape(
    algorithm,
    Number(keys),
    Number(per),
    Number(rules),
    which === "capped",
    restart === "" ? false : restart,
    Number(maxKeys || 10_000),
  );
  process.exit(0);
}
if (process.argv[2] === "--sweep") {
  await sweep();
  process.exit(0);
}
if (process.argv[2] === "--shapes") {
  await shapes();
  process.exit(0);
}
if (process.argv[2] === "--restore") {
  await restoreShape();
  process.exit(0);
}
if (process.argv[2] === "--live-keys") {
  measureLiveKeys(process.argv[3]);
  process.exit(0);
}
if (process.argv[2] === "--flood") {
  await measureFlood(process.argv[3], process.argv[4]);
  process.exit(0);
}

({ default: FastifyLocalStore } = await import("@fastify/rate-limit/store/LocalStore.js"));
console.log(
  `sluice in-process benchmark: ${DECISIONS.toLocaleString("en")} decisions per run, median of ${REPS}, node ${process.version}`,
);
clockCost();
await speed();
// BENCH_SPEED_ONLY=1: the clock and per-decision tables only (a minute, not the floods' several).
if (process.env.BENCH_SPEED_ONLY !== "1") {
  await bytesPerKey();
  await flood();
}

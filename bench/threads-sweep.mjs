// The fairness sweep of issue 34 on SharedMemoryStore: every algorithm × every flood shape, past
// maxKeys, with the store re-attached (a worker restart: SharedMemoryStore.attach on its handle,
// new limiters) after round 2. Per cell: honest requests refused (well-behaved keys that come
// back every round, using half their limit), brand-new requests refused, flood keys admitted
// past their limit in some rule (escapes), and the store's bytes. An uncapped store refuses none
// of the honest or brand-new requests of these traces (they stay within every limit), so any
// refusal is the capped store's. Cells past 1%, or with an escape, are listed at the end.
// Run with: npm run build && node bench/threads-flood.mjs --sweep
// SWEEP_ALGORITHMS (comma list) and SWEEP_SHAPES (a regular expression on the shape's name)
// pick cells; SWEEP_SCALE multiplies the floods. Seeded (SWEEP_SEED, default 1): runs replay.
import { createLimiter, ManualClock } from "../dist/index.js";
import { SharedMemoryStore } from "../dist/stores/threads/index.js";

const LIMIT = 10;
const ROUNDS = 5;
const SEED = Number(process.env.SWEEP_SEED ?? 1);
const SCALE = Number(process.env.SWEEP_SCALE ?? 1);
const ALGORITHMS = (
  process.env.SWEEP_ALGORITHMS ?? "fixed-window,sliding-window,token-bucket,gcra,leaky-bucket,sliding-log,concurrency"
).split(",");
const PICK = new RegExp(process.env.SWEEP_SHAPES ?? ".");

/** The spec of `algorithm` at LIMIT a minute. */
function specOf(algorithm) {
  if (algorithm === "token-bucket") return { algorithm, capacity: LIMIT, refillPerSecond: LIMIT / 60 };
  if (algorithm === "leaky-bucket") return { algorithm, capacity: LIMIT, leakPerSecond: LIMIT / 60 };
  if (algorithm === "concurrency") return { algorithm, limit: LIMIT, leaseMs: 60_000 };
  if (algorithm === "gcra") return { algorithm, limit: LIMIT, periodMs: 60_000 };
  return { algorithm, limit: LIMIT, windowMs: 60_000 };
}

/**
 * The shapes: flood keys in all (each spending `each` requests in every rule), the rules every
 * request goes through, maxKeys, and the well-behaved keys (their records: honest × rules).
 */
const SHAPES = [
  { name: "1M one-request keys", flood: 1_000_000, each: 1, rules: 1, maxKeys: 10_000, honest: 1000 },
  { name: "600k keys spending their limit", flood: 600_000, each: LIMIT, rules: 1, maxKeys: 10_000, honest: 1000 },
  { name: "3M one-request keys", flood: 3_000_000, each: 1, rules: 1, maxKeys: 10_000, honest: 1000 },
  {
    name: "50 rules, 20k keys spending (1M records)",
    flood: 20_000,
    each: LIMIT,
    rules: 50,
    maxKeys: 10_000,
    honest: 1000,
  },
  {
    name: "50 rules, 60k one-request keys (3M records)",
    flood: 60_000,
    each: 1,
    rules: 50,
    maxKeys: 10_000,
    honest: 1000,
  },
  {
    name: "200 rules, 10k keys spending (2M records)",
    flood: 10_000,
    each: LIMIT,
    rules: 200,
    maxKeys: 10_000,
    honest: 200,
  },
  {
    name: "200 rules, 15k one-request keys (3M records)",
    flood: 15_000,
    each: 1,
    rules: 200,
    maxKeys: 10_000,
    honest: 200,
  },
  {
    name: "8 rules, maxKeys half the honest records, 40k spending",
    flood: 40_000,
    each: LIMIT,
    rules: 8,
    maxKeys: 4000,
    honest: 1000,
  },
  {
    name: "8 rules, maxKeys half the honest records, 200k one-request",
    flood: 200_000,
    each: 1,
    rules: 8,
    maxKeys: 4000,
    honest: 1000,
  },
  {
    name: "8 rules, maxKeys a quarter of the honest records, 40k spending",
    flood: 40_000,
    each: LIMIT,
    rules: 8,
    maxKeys: 2000,
    honest: 1000,
  },
  {
    name: "8 rules, maxKeys a quarter of the honest records, 200k one-request",
    flood: 200_000,
    each: 1,
    rules: 8,
    maxKeys: 2000,
    honest: 1000,
  },
];

/** One cell: the shape's trace through a fresh store; refusals, escapes and bytes. */
function cell(algorithm, shape) {
  const spec = specOf(algorithm);
  const wide = algorithm === "sliding-log" || algorithm === "concurrency";
  const store = new SharedMemoryStore({
    maxKeys: shape.maxKeys,
    seed: SEED,
    maxRules: Math.max(64, shape.rules),
    ...(wide ? { recordWords: 1 + LIMIT } : {}),
  });
  const clock = new ManualClock(1_800_000_000_000);
  let limiters;
  const bind = (s) => {
    limiters = Array.from({ length: shape.rules }, (_, r) => createLimiter(spec, { clock, store: s, name: `r${r}` }));
  };
  bind(store);
  const flood = Math.round(shape.flood * SCALE);
  const fresh = 200;
  let honestRefused = 0;
  let freshRefused = 0;
  let escapes = 0;
  let next = 0;
  const admitted = new Int32Array(shape.rules);
  for (let round = 0; round < ROUNDS; round++) {
    // A restart: the next threads attach to the same memory and bind their limiters again.
    if (round === 2) bind(SharedMemoryStore.attach(store.handle));
    for (let g = 0; g < shape.honest; g++) {
      clock.advance(1);
      let ok = true;
      for (const l of limiters) if (!l.tryAcquire(`good${g}`).allowed) ok = false;
      if (!ok) honestRefused++;
    }
    for (let f = 0; f < fresh; f++) {
      let ok = true;
      for (const l of limiters) if (!l.tryAcquire(`fresh${round}:${f}`).allowed) ok = false;
      if (!ok) freshRefused++;
    }
    for (let f = 0; f < flood / ROUNDS; f++) {
      const key = `flood${next++}`;
      admitted.fill(0);
      for (let e = 0; e < shape.each; e++) {
        for (let r = 0; r < shape.rules; r++) if (limiters[r].tryAcquire(key).allowed) admitted[r]++;
      }
      for (let r = 0; r < shape.rules; r++) if (admitted[r] > LIMIT) escapes++;
    }
  }
  const s = store.stats();
  store.close();
  return {
    honest: honestRefused / (shape.honest * ROUNDS),
    fresh: freshRefused / (fresh * ROUNDS),
    escapes,
    bytes: s.bytes,
  };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;
const bad = [];
console.log(`sweep (seed ${SEED}, scale ${SCALE}, load ${(await import("node:os")).loadavg()[0].toFixed(1)})`);
for (const shape of SHAPES) {
  if (!PICK.test(shape.name)) continue;
  for (const algorithm of ALGORITHMS) {
    const t = performance.now();
    const c = cell(algorithm, shape);
    const line = `${shape.name} | ${algorithm} | honest ${pct(c.honest)} | new ${pct(c.fresh)} | escapes ${c.escapes} | ${(c.bytes / 2 ** 20).toFixed(1)} MiB | ${((performance.now() - t) / 1000).toFixed(0)} s`;
    console.log(line);
    if (c.honest > 0.01 || c.fresh > 0.01 || c.escapes > 0) bad.push(line);
  }
}
console.log(bad.length === 0 ? "no cell past 1%" : `cells past 1% or escaping (${bad.length}):\n${bad.join("\n")}`);

// The floods of SPEC §10 ("honest clients pass") against SharedMemoryStore beside MemoryStore,
// both with maxKeys 10,000 and default settings, gcra 10 per minute, on a ManualClock: 1,000
// well-behaved keys send one request in each of 5 rounds, 200 brand-new keys send their first
// request in each round, and between rounds a flood of new keys arrives: FLOOD keys in all,
// each spending its whole limit (`spend`, 200,000 keys) or sending one request (`one`,
// 1,000,000 keys). Prints the refusals of well-behaved and brand-new requests (§10 allows ≤ 1%
// of each) and the store's counters. Seeded stores: every run decides the same.
// BENCH_MAX_KEYS sets the SharedMemoryStore's maxKeys (default 10,000, as MemoryStore's);
// BENCH_MAX_BYTES its maxBytes (default: as MemoryStore's budget, 24 MiB at 10,000 keys; 1 sizes
// it for maxKeys alone, as before the budget); BENCH_SCALE multiplies both floods (3: 600,000
// keys spending their limit, 3,000,000 one-request keys); BENCH_ALGORITHM the rule's algorithm
// (sliding-log takes recordWords 11); BENCH_RULES runs every request through that many rules
// (default 1; e.g. BENCH_RULES=50 BENCH_SCALE=0.05: 10,000 keys × 50 rules).
// Last, what a never-seen key has left (a peek) after every 50,000 of 200,000 one-request keys:
// the summary filter answers for it, so it is read back from the summary (and finds it climbed)
// only as one of the filter's false positives, which grow past its capacity.
// Run with: npm run build && node bench/threads-flood.mjs
// `--sweep` runs bench/threads-sweep.mjs instead: every algorithm × every shape of issue 34.
import { createLimiter, ManualClock, MemoryStore } from "../dist/index.js";
import { SharedMemoryStore } from "../dist/stores/threads/index.js";

const SPEC = { algorithm: "gcra", limit: 10, periodMs: 60_000 };
const GOOD = 1000;
const FRESH = 200;
const ROUNDS = 5;
const SHARED_MAX_KEYS = Number(process.env.BENCH_MAX_KEYS ?? 10_000);
const SHARED_MAX_BYTES = process.env.BENCH_MAX_BYTES === undefined ? undefined : Number(process.env.BENCH_MAX_BYTES);
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const ALGORITHM = process.env.BENCH_ALGORITHM ?? "gcra";
const RULES = Number(process.env.BENCH_RULES ?? 1);
if (ALGORITHM !== "gcra") {
  Object.assign(SPEC, {
    algorithm: ALGORITHM,
    windowMs: 60_000,
    capacity: 10,
    refillPerSecond: 10 / 60,
    leakPerSecond: 10 / 60,
    leaseMs: 60_000,
  });
  delete SPEC.periodMs;
  for (const k of Object.keys(SPEC)) if (!specKeys(ALGORITHM).includes(k)) delete SPEC[k];
}
/** The option names of each algorithm's spec this bench sets. */
function specKeys(algorithm) {
  if (algorithm === "token-bucket") return ["algorithm", "capacity", "refillPerSecond"];
  if (algorithm === "leaky-bucket") return ["algorithm", "capacity", "leakPerSecond"];
  if (algorithm === "concurrency") return ["algorithm", "limit", "leaseMs"];
  return ["algorithm", "limit", "windowMs"];
}
/** The SharedMemoryStore under test. */
const sharedStore = () =>
  new SharedMemoryStore({
    maxKeys: SHARED_MAX_KEYS,
    seed: 1,
    ...(ALGORITHM === "sliding-log" || ALGORITHM === "concurrency" ? { recordWords: 11 } : {}),
    ...(SHARED_MAX_BYTES === undefined ? {} : { maxBytes: SHARED_MAX_BYTES }),
  });

/** One flood through one store; the refusals and the store's counters. */
function run(store, keys, each) {
  const clock = new ManualClock(1_800_000_000_000);
  const limiters = Array.from({ length: RULES }, (_, r) => createLimiter(SPEC, { clock, store, name: `r${r}` }));
  // One request through every rule: refused when any refuses.
  const limiter = {
    tryAcquire: (key) => {
      let allowed = true;
      for (const l of limiters) if (!l.tryAcquire(key).allowed) allowed = false;
      return { allowed };
    },
  };
  let good = 0;
  let fresh = 0;
  let flood = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (let g = 0; g < GOOD; g++) {
      clock.advance(1);
      if (!limiter.tryAcquire(`good${g}`).allowed) good++;
    }
    for (let f = 0; f < FRESH; f++) if (!limiter.tryAcquire(`fresh${round}:${f}`).allowed) fresh++;
    for (let f = 0; f < keys / ROUNDS; f++) {
      const key = `flood${flood++}`;
      for (let e = 0; e < each; e++) limiter.tryAcquire(key);
    }
  }
  const pct = (n, of) => `${n} of ${of} (${((100 * n) / of).toFixed(1)}%)`;
  if (RULES > 1)
    return `${RULES} rules: well-behaved refused ${pct(good, GOOD * ROUNDS)}, brand-new refused ${pct(fresh, FRESH * ROUNDS)}`;
  return `well-behaved refused ${pct(good, GOOD * ROUNDS)}, brand-new refused ${pct(fresh, FRESH * ROUNDS)}`;
}

if (process.argv.includes("--sweep")) await import("./threads-sweep.mjs");
else {
  for (const [name, keys, each] of [
    [`${(200_000 * SCALE).toLocaleString("en")} keys spending their whole limit`, 200_000 * SCALE, 10],
    [`${(1_000_000 * SCALE).toLocaleString("en")} keys sending one request`, 1_000_000 * SCALE, 1],
  ]) {
    console.log(`flood of ${name} (${ALGORITHM}):`);
    console.log(`  MemoryStore        ${run(new MemoryStore({ maxKeys: 10_000, seed: 1 }), keys, each)}`);
    const shared = sharedStore();
    const line = run(shared, keys, each);
    const s = shared.stats();
    console.log(
      `  SharedMemoryStore  (maxKeys ${SHARED_MAX_KEYS.toLocaleString("en")}) ${line}; evicted ${s.evicted}, approximate ${s.approximate}, bytes ${s.bytes}`,
    );
  }

  // The climb: a key read back from the summary keeps the summary's estimate in its record, and
  // that estimate goes back into the cells, with the key's own request on top, when it is pushed
  // out again; a never-seen key sees it when the filter lets it through to its cells.
  {
    const clock = new ManualClock(1_800_000_000_000);
    const store = sharedStore();
    const limiter = createLimiter(SPEC, { clock, store });
    const left = [];
    for (let n = 0; n <= 200_000; n++) {
      if (n % 50_000 === 0) left.push(`${n.toLocaleString("en")}: ${limiter.peek(`never-seen${n}`).remaining}`);
      limiter.tryAcquire(`one${n}`);
    }
    console.log(`SharedMemoryStore: a never-seen key's remaining (of 10) after n one-request keys: ${left.join(", ")}`);
  }
}

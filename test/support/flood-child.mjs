// One flood scenario of test/properties/flood.test.ts in a process of its own (run with
// --expose-gc), so the memory it reports is the store's alone: the heap and typed arrays'
// buffers after a full collection, before and after. Uses the built package (dist/).
// Usage: node --expose-gc flood-child.mjs <algorithm> <keys> <perKey> | rules <rules> <keys>
import { createLimiter, ManualClock, MemoryStore } from "../../dist/index.js";

const HOUR = 3_600_000;
const held = () => {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const [mode, a, b] = process.argv.slice(2);

function flood(algorithm, keys, perKey) {
  const spec = {
    gcra: { algorithm, limit: 10, periodMs: HOUR },
    "sliding-log": { algorithm, limit: 10, windowMs: HOUR },
    concurrency: { algorithm, limit: 10, leaseMs: HOUR },
  }[algorithm] ?? { algorithm: "fixed-window", limit: 10, windowMs: HOUR };
  const clock = new ManualClock(1_800_000_000_000 - (1_800_000_000_000 % HOUR) + 1);
  const before = held();
  const store = new MemoryStore({ maxKeys: 10_000, seed: 14 });
  const limiter = createLimiter(spec, { clock, store });
  let good = 0;
  let goodRefused = 0;
  let firstRefused = 0;
  let overLimit = 0;
  const step = Math.floor(keys / 5); // the returning keys come back 5 times across the flood
  for (let k = 0; k < keys; k++) {
    if (k % step === 0) {
      for (let g = 0; g < 1000; g++) {
        good++;
        if (!limiter.tryAcquire(`good${g}`).allowed) goodRefused++;
      }
    }
    const key = `new${k}`;
    if (!limiter.tryAcquire(key).allowed) firstRefused++;
    let passed = 1;
    for (let r = 1; r < perKey; r++) if (limiter.tryAcquire(key).allowed) passed++;
    if (perKey > 1 && limiter.tryAcquire(key).allowed) passed++; // one past the limit
    if (passed > 10) overLimit++;
    if (k % 65536 === 0) clock.advance(1);
  }
  const grown = held() - before;
  return { good, goodRefused, firstRefused, overLimit, grown, stats: store.stats() };
}

function rules(count, keys) {
  const clock = new ManualClock(1_800_000_000_000);
  const before = held();
  const store = new MemoryStore({ maxKeys: 100_000, seed: 50 });
  const limiters = Array.from({ length: count }, (_, i) =>
    createLimiter({ algorithm: "fixed-window", limit: 10 + i, windowMs: HOUR }, { clock, store, name: `rule${i}` }),
  );
  for (let k = 0; k < keys; k++) {
    const key = `k${k}`;
    for (const limiter of limiters) limiter.tryAcquire(key);
  }
  const grown = held() - before;
  return { grown, stats: store.stats() };
}

const result = mode === "rules" ? rules(Number(a), Number(b)) : flood(mode, Number(a), Number(b));
process.stdout.write(`${JSON.stringify(result, (_k, v) => (v === Number.POSITIVE_INFINITY ? "Infinity" : v))}\n`);

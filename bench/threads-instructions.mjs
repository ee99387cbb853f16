// Instructions per decision, load-independent (the machine's other work does not change them):
// one thread deciding gcra on MemoryStore or SharedMemoryStore over KEYS keys, after a warm-up
// of 3 × KEYS decisions. Run it twice under callgrind, with 1 and with N decisions, and divide
// the difference of the two totals by N - 1:
//
//   npm run build
//   for n in 1 300000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null --cache-sim=no \
//     node --single-threaded --random-seed=7 --hash-seed=7 bench/threads-instructions.mjs shared 10000 $n \
//     2>&1 | grep -o 'Collected : [0-9]*'; done
//
// (`memory` in place of `shared` for MemoryStore). Both stores' decisions here take the limiter's
// fast lane (a one-unit `tryAcquire` of a plain rule goes to the bound rule's `checkOne`), so
// the ratio compares the stores, not the limiter's layers. V8's flags fix its seeds and keep its
// compiler and GC on the main thread, so repeated runs agree to a few instructions per decision.
// BENCH_STRING_SUBCLASS=1 first declares a subclass of String, as ioredis does when imported
// (RESP3's VerbatimString): String.prototype then has slow properties, which a key hash reading
// `key.charCodeAt(i)` paid for on every character (with ioredis imported, 3,020 instructions per
// decision where 1,790 without; now 1,872 and 1,870).
import { createLimiter, MemoryStore } from "../dist/index.js";
import { SharedMemoryStore } from "../dist/stores/threads/index.js";

// Declared for its side effect on String.prototype (see the header).
if (process.env.BENCH_STRING_SUBCLASS === "1") globalThis.sluiceBenchString = class extends String {};

const [mode = "shared", keyCount = "10000", decisions = "300000"] = process.argv.slice(2);
const n = Number(keyCount);
const spec = { algorithm: "gcra", limit: 1_000_000, periodMs: 60_000 };
const keys = Array.from({ length: n }, (_, i) => `user:${i}`);
const store = mode === "memory" ? new MemoryStore() : new SharedMemoryStore({ maxKeys: 2 * n, seed: 12345 });
const limiter = createLimiter(spec, { store, name: "instructions" });

/** `m` decisions over the keys, from `offset`; every one must be an admission. */
function decide(m, offset) {
  let allowed = 0;
  for (let i = 0; i < m; i++) if (limiter.tryAcquire(keys[(offset + i * 7919) % n]).allowed) allowed++;
  if (allowed !== m) throw new Error(`only ${allowed} of ${m} allowed`);
}

decide(3 * n, 0);
decide(Number(decisions), 1);

// The flood of docs/semantics.md §10, as a test of bounds (no timing): a store capped at 10,000
// keys, 1,000 well-behaved keys using half their limit, 100,000 new keys flooding within one
// window. At most 1% of the well-behaved requests may be refused, memory may grow by less than
// 16 MB, and no key passes its limit. Figures are printed for the README.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
  { algorithm: "sliding-log", limit: 10, windowMs: 60_000 },
  { algorithm: "sliding-window", limit: 10, windowMs: 60_000 },
  { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 60 },
  { algorithm: "gcra", limit: 10, periodMs: 60_000 },
  { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 60 },
];

const GOOD = 1_000;
const FLOOD = 100_000;
const ROUNDS = 5; // each good key sends 5 of its 10 within the window

describe("a flood of new keys against maxKeys 10,000", () => {
  for (const spec of SPECS) {
    it(`${spec.algorithm}: refuses ≤ 1% of well-behaved requests, grows memory < 16 MB, no key passes its limit`, () => {
      const clock = new ManualClock(1_700_000_000_000);
      const store = new MemoryStore({ maxKeys: 10_000 });
      const limiter = createLimiter(spec, { clock, store });
      const floodAdmitted = new Uint8Array(FLOOD); // allocated before measuring: not the store's
      gc();
      const before = process.memoryUsage().heapUsed;
      let refused = 0;
      let flood = 0;
      for (let round = 0; round < ROUNDS; round++) {
        for (let g = 0; g < GOOD; g++) {
          clock.advance(1);
          if (!(limiter.tryAcquire(`good${g}`) as Decision).allowed) refused++;
        }
        for (let f = 0; f < FLOOD / ROUNDS; f++) {
          // Flood keys come back too: a tenth of them hammer an older flood key 11 times.
          const n = f % 10 === 0 && flood > 0 ? flood - 1 : flood++;
          if ((limiter.tryAcquire(`flood${n}`) as Decision).allowed) floodAdmitted[n] = (floodAdmitted[n] ?? 0) + 1;
        }
      }
      gc();
      const grown = process.memoryUsage().heapUsed - before;
      const stats = store.stats();
      console.log(
        `flood ${spec.algorithm}: refused ${refused} of ${GOOD * ROUNDS} well-behaved (${((100 * refused) / (GOOD * ROUNDS)).toFixed(2)}%), heap +${(grown / 2 ** 20).toFixed(1)} MB, sketch ${(stats.sketchBytes / 2 ** 20).toFixed(2)} MB, evicted ${stats.evicted}, approximate ${stats.approximate}`,
      );
      expect(refused).toBeLessThanOrEqual((GOOD * ROUNDS) / 100);
      expect(grown).toBeLessThan(16 * 2 ** 20);
      expect(stats.keys).toBeLessThanOrEqual(10_000);
      expect(stats.evicted).toBeGreaterThan(FLOOD / 2);
      // Within one window nobody passes the limit (10), however often it was evicted.
      expect(Math.max(...floodAdmitted)).toBeLessThanOrEqual(10);
    });
  }
});

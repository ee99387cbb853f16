// The summary filter (src/stores/threads/summary-filter.ts) forgets keys in generations, while
// other threads push keys out into the summary and read them back: 4 threads walk 600 keys
// through a table of 48 in lockstep rounds 3 s apart, so every round pushes hundreds of keys out,
// fills a generation, and (once the older generation's windows have ended) rotates it. A key the
// filter forgot while the summary still counted it would start over and be admitted past its
// limit: per key and window, the admissions of all threads stay within the limit.
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { H } from "../../src/stores/threads/layout.ts";
import { ensureBuilt, spawnWorker, startTogether } from "./support.ts";

beforeAll(() => ensureBuilt(), 180_000);

const THREADS = 4;
/** Worker start-up dominates on a busy 2-core machine: well above vitest's default 20 s. */
const SLOW = 90_000;
const WINDOW_MS = 10_000;
/** A multiple of the window: windows are aligned to it. */
const NOW = 1_800_000_000_000;
const STEP_MS = 3000;
const ROUNDS = 12;
/** Checks per key per round in each thread: 8 a round in all, 24 or more a window, over the limit. */
const CHECKS = 2;
const LIMIT = 4;
const KEYS = Array.from({ length: 600 }, (_, i) => `k${i}`);

describe("summary filter generations race evictions and read-backs: 4 threads, 600 keys, a table of 48", () => {
  for (const seed of [7, 0x9e3779b9]) {
    it(
      `no key is admitted past its limit in any window (seed ${seed})`,
      async () => {
        const store = new SharedMemoryStore({ maxKeys: 48, seed });
        const control = new Int32Array(new SharedArrayBuffer(12));
        const workers = Array.from({ length: THREADS }, (_, t) =>
          spawnWorker<{ allowed: number[]; approximate: number }>(store.handle, {
            kind: "rounds",
            rules: [{ name: "api", spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS } }],
            control: control.buffer as SharedArrayBuffer,
            now: NOW,
            stepMs: STEP_MS,
            rounds: ROUNDS,
            checks: CHECKS,
            keys: KEYS,
            threads: THREADS,
            // Apart in the key order: the same buckets, at different moments of a round.
            offset: t * 150,
          }),
        );
        const results = await startTogether(control, workers);
        const K = KEYS.length;
        const perWindow = new Map<string, number>();
        let admitted = 0;
        for (const { allowed } of results) {
          for (let round = 0; round < ROUNDS; round++) {
            const window = Math.floor((NOW + round * STEP_MS) / WINDOW_MS);
            for (let i = 0; i < K; i++) {
              const n = allowed[round * K + i] as number;
              admitted += n;
              const at = `${KEYS[i]} window ${window}`;
              perWindow.set(at, (perWindow.get(at) ?? 0) + n);
            }
          }
        }
        const over = [...perWindow].filter(([, n]) => n > LIMIT).map(([at, n]) => `${at}: ${n}`);
        expect(over, `seed ${seed}`).toEqual([]);
        // The race it claims: keys pushed out and read back, generations rotated, admissions.
        const stats = store.stats();
        expect(stats.evicted, `seed ${seed}`).toBeGreaterThan(5000);
        expect(
          results.reduce((n, r) => n + r.approximate, 0),
          `seed ${seed}`,
        ).toBeGreaterThan(1000);
        // Both filters' (summary.ts: keys given up spent go to the spent filter).
        const header = new Int32Array(store.handle.buffer);
        const rotations = Atomics.load(header, H.filterEpoch) + Atomics.load(header, H.spentEpoch);
        expect(rotations, `seed ${seed}`).toBeGreaterThanOrEqual(2);
        expect(admitted, `seed ${seed}`).toBeGreaterThan(K * 3);
        store.close();
      },
      SLOW,
    );
  }
});

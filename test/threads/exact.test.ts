// One exact limit across real worker threads: 8 threads × 5,000 checks started together on one
// key admit exactly the limit, and over 10,000 keys every key's total is exact. All checks read
// one fixed instant, so "exact" does not depend on how the threads were scheduled.
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type RuleDef, spawnWorker, startTogether } from "./support.ts";

const THREADS = 8;
/** Worker start-up dominates on a busy 2-core machine: well above vitest's default 20 s. */
const SLOW = 90_000;
const NOW = 1_800_000_000_123;

beforeAll(() => ensureBuilt(), 180_000);

/** Runs `THREADS` flood workers started together; returns each worker's admissions per key index. */
async function flood(store: SharedMemoryStore, rules: RuleDef[], keysOf: (t: number) => string[], rounds: number) {
  const control = new Int32Array(new SharedArrayBuffer(8));
  const workers = Array.from({ length: THREADS }, (_, t) =>
    spawnWorker<{ allowed: number[] }>(store.handle, {
      kind: "flood",
      rules,
      control: control.buffer as SharedArrayBuffer,
      now: NOW,
      keys: keysOf(t),
      rounds,
    }),
  );
  return startTogether(control, workers);
}

const ONE_KEY: Array<[string, unknown]> = [
  ["fixed-window", { algorithm: "fixed-window", limit: 1000, windowMs: 3_600_000 }],
  ["sliding-log", { algorithm: "sliding-log", limit: 1000, windowMs: 3_600_000 }],
  ["token-bucket", { algorithm: "token-bucket", capacity: 1000, refillPerSecond: 1 }],
  ["gcra", { algorithm: "gcra", limit: 1000, periodMs: 3_600_000 }],
];

describe("SharedMemoryStore across 8 worker threads", () => {
  for (const [name, spec] of ONE_KEY) {
    it(
      `${name}: 8 × 5,000 checks on one key, limit 1,000 → exactly 1,000 admitted`,
      async () => {
        const store = new SharedMemoryStore({ maxKeys: 64, recordWords: name === "sliding-log" ? 1001 : 6 });
        const results = await flood(store, [{ name, spec }], () => ["the-key"], 5000);
        const total = results.reduce((n, r) => n + (r.allowed[0] as number), 0);
        expect(total).toBe(1000);
        // Every thread got its turn at some point (the start was shared).
        expect(results.length).toBe(THREADS);
        expect(store.stats()).toMatchObject({ keys: 1, evicted: 0, approximate: 0 });
      },
      SLOW,
    );
  }

  it(
    "10,000 keys, each checked 4 times by 4 different threads at once: per-key totals exact",
    async () => {
      // 40,000 records in a table sized for 80,000, on a fixed seed: no bucket overflows, so every
      // total is exact (at exactly maxKeys about one run in seven overflowed a bucket somewhere).
      const store = new SharedMemoryStore({ maxKeys: 80_000, seed: 12 });
      const KEYS = 10_000;
      const rules: RuleDef[] = [
        { name: "fw", spec: { algorithm: "fixed-window", limit: 2, windowMs: 3_600_000 } },
        { name: "tb", spec: { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.001 } },
        { name: "gc", spec: { algorithm: "gcra", limit: 1, periodMs: 3_600_000 } },
        { name: "sl", spec: { algorithm: "sliding-log", limit: 2, windowMs: 3_600_000 } },
      ];
      // Thread t checks keys t·1250 … t·1250 + 4999 (mod 10,000): each key by exactly 4 threads.
      const keysOf = (t: number) => Array.from({ length: 5000 }, (_, i) => `user-${(t * 1250 + i) % KEYS}`);
      const results = await flood(store, rules, keysOf, 1);
      const perKey = new Map<string, number>();
      results.forEach((r, t) => {
        keysOf(t).forEach((key, i) => {
          perKey.set(key, (perKey.get(key) ?? 0) + (r.allowed[i] as number));
        });
      });
      expect(perKey.size).toBe(KEYS);
      // Per key: fixed-window 2 + token-bucket 3 + gcra 1 + sliding-log 2 of its 4 × 4 checks.
      expect(store.stats()).toMatchObject({ keys: 4 * KEYS, evicted: 0, approximate: 0 });
      const wrong = [...perKey].filter(([, n]) => n !== 8);
      expect(wrong).toEqual([]);
    },
    SLOW,
  );
});

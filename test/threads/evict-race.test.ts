// Evictions racing the lean check path (threads/decide.ts `checkStored`): 4 threads hammer a
// SharedMemoryStore whose table holds a few dozen keys with a thousand keys under every
// algorithm, a composite and a composite with a ban, all at one instant, so buckets overflow
// all the time: a thread pushing an entry out into the summary (or inserting, resetting,
// refunding, blocking: one thread mixes those in on every fourth key) races threads checking
// the bucket's other keys on the lean path. Whatever the interleaving, the capped store admits
// no key more than an uncapped reference would: a check published over a bucket another thread
// changed, a lost update, a key that vanished or came back from a stale block would each let a
// key pass its limit.
import { createLimiter, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type RuleDef, spawnWorker, startTogether } from "./support.ts";

beforeAll(() => ensureBuilt(), 180_000);

const THREADS = 4;
/** Worker start-up dominates on a busy 2-core machine: well above vitest's default 20 s. */
const SLOW = 90_000;
const NOW = 1_800_000_000_333;
const HOUR = 3_600_000;
const KEYS = Array.from({ length: 1000 }, (_, i) => `k${i}`);
/** Keys walked together: each chunk's entries overflow the table, and each key comes back `PASSES` times. */
const CHUNK = 48;
const PASSES = 3;
/** Decisions per rule per key per visit. */
const CHECKS = 1;
/** Every MIX_EVERY-th key also gets refunds, resets and blocks from the mixing thread. */
const MIX_EVERY = 4;

const ALL: RuleDef[] = [
  { name: "fw", spec: { algorithm: "fixed-window", limit: 4, windowMs: HOUR } },
  { name: "sw", spec: { algorithm: "sliding-window", limit: 4, windowMs: HOUR } },
  { name: "sl", spec: { algorithm: "sliding-log", limit: 4, windowMs: HOUR } },
  { name: "tb", spec: { algorithm: "token-bucket", capacity: 4, refillPerSecond: 0.001 } },
  { name: "gc", spec: { algorithm: "gcra", limit: 4, periodMs: HOUR } },
  { name: "lb", spec: { algorithm: "leaky-bucket", capacity: 4, leakPerSecond: 0.001 } },
  {
    name: "both",
    spec: [
      { algorithm: "fixed-window", limit: 5, windowMs: HOUR },
      { algorithm: "token-bucket", capacity: 3, refillPerSecond: 0.001 },
    ],
    ban: { after: 2, withinMs: HOUR, forMs: HOUR },
  },
];
/**
 * Two runs of four rules each (every algorithm, the composite with a ban in both): the summary
 * pool holds the cells of four rules (threads/params.ts), and past that every new key would be
 * unplaced, so denied, and the race this test is about would not run.
 */
const RUNS: { seed: number; rules: RuleDef[] }[] = [
  { seed: 41, rules: pick("fw", "sl", "gc", "both") },
  { seed: 0x9e3779b9, rules: pick("sw", "tb", "lb", "both") },
];

function pick(...names: string[]): RuleDef[] {
  return names.map((n) => ALL.find((r) => r.name === n) as RuleDef);
}

interface Counts {
  allowed: number[];
  refunds: number[];
  resets: number[];
  approximate: number;
  blocked: number;
  unkept: number;
}

/** What an uncapped MemoryStore admits of `attempts` checks of one key at NOW, per rule. */
function reference(rules: RuleDef[], attempts: number): number[] {
  const store = new MemoryStore();
  return rules.map((r) => {
    const limiter = createLimiter(r.spec as never, {
      store,
      name: r.name,
      clock: { now: () => NOW },
      ...(r.ban === undefined ? {} : { ban: r.ban }),
    });
    let n = 0;
    for (let i = 0; i < attempts; i++) if (limiter.tryAcquire("x").allowed) n++;
    return n;
  });
}

async function run(
  seed: number,
  rules: RuleDef[],
  maxKeys: number,
): Promise<{ store: SharedMemoryStore; results: Counts[] }> {
  const store = new SharedMemoryStore({ maxKeys, recordWords: 8, seed });
  const control = new Int32Array(new SharedArrayBuffer(8));
  const workers = Array.from({ length: THREADS }, (_, t) =>
    spawnWorker<Counts>(store.handle, {
      kind: "evict",
      rules,
      control: control.buffer as SharedArrayBuffer,
      now: NOW,
      keys: KEYS,
      chunk: CHUNK,
      passes: PASSES,
      checks: CHECKS,
      // Close together, one walking backwards: the same keys and buckets, at slightly different times.
      offset: 2 * t,
      reverse: t === THREADS - 1,
      mixer: t === 0,
      mixEvery: MIX_EVERY,
      seed: seed ^ 0x5eed,
    }),
  );
  return { store, results: await startTogether(control, workers) };
}

describe("evictions into the summary race lean-path checks: 4 threads, 1000 keys, a table of 48", () => {
  for (const { seed, rules } of RUNS) {
    it(
      `no key is admitted more than an uncapped store would admit it (${rules.map((r) => r.name).join(", ")}; seed ${seed})`,
      async () => {
        const { store, results } = await run(seed, rules, 48);
        const sum = (pick: (c: Counts) => number[], at: number) =>
          results.reduce((n, c) => n + (pick(c)[at] as number), 0);
        const limits = reference(rules, 100);
        const plain = reference(rules, THREADS * PASSES * CHECKS);
        const over: string[] = [];
        let admitted = 0;
        rules.forEach((rule, r) => {
          KEYS.forEach((key, i) => {
            const at = r * KEYS.length + i;
            const got = sum((c) => c.allowed, at);
            admitted += got;
            // A mixed key: each reset may give back the whole limit, each refund one unit.
            const bound =
              i % MIX_EVERY === 0
                ? (limits[r] as number) * (1 + sum((c) => c.resets, at)) + sum((c) => c.refunds, at)
                : (plain[r] as number);
            if (got > bound) over.push(`${rule.name} ${key}: ${got} > ${bound}`);
          });
        });
        expect(over, `seed ${seed}`).toEqual([]);
        // The race it claims: entries pushed out, decisions read back, blocks, and admissions.
        const stats = store.stats();
        expect(stats.evicted, `seed ${seed}`).toBeGreaterThan(1000);
        expect(
          results.reduce((n, c) => n + c.approximate, 0),
          `seed ${seed}`,
        ).toBeGreaterThan(1000);
        expect(results[0]?.blocked, `seed ${seed}`).toBeGreaterThan(0);
        expect(admitted, `seed ${seed}`).toBeGreaterThan(2000);
      },
      SLOW,
    );
  }
});

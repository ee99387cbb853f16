// Seeded differential fuzz of the summary filter and the returning bit (one thread, several
// SharedMemoryStore instances attached to one memory, each with its own Summary and filter view,
// as threads have): a few hot keys take checks, refunds, resets and peeks while a flood of
// one-shot keys (under the same rule and under a second rule bound in one instance only) pushes
// thousands of entries through a table of 128, filling and rotating filter generations. Every
// check or peek the capped store admits, an uncapped MemoryStore replaying the same trace admits
// (per key, until the capped store first refuses what MemoryStore admits; a reset makes both
// fresh again). A failure names its seed and specs. It fails with the filter answering "never
// summarised" (all four cases) or rotating regardless of fresh-at (the 300-key cases). Half the
// seeds give the rule a ban: the 300-key cases failed on those while a key read back from the
// summary counted strikes as an exact key does (test/threads/ban-readback.test.ts).
// Six seeds a case (FUZZ_SEEDS to run more): each mutant above still fails within the first
// three seeds, and the file runs in ~6-20 s (30 seeds took 60 s a case under load).
import { type AlgorithmSpec, createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { compileRule } from "../../src/core/rule.ts";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { widthFor } from "../../src/stores/threads/codec.ts";
import { H } from "../../src/stores/threads/layout.ts";

function specOf(rnd: () => number): AlgorithmSpec {
  const limit = 1 + Math.floor(rnd() * 5);
  const windowMs = 200 + Math.floor(rnd() * 3000);
  switch (Math.floor(rnd() * 6)) {
    case 0:
      return { algorithm: "fixed-window", limit, windowMs };
    case 1:
      return { algorithm: "sliding-log", limit, windowMs };
    case 2:
      return { algorithm: "sliding-window", limit, windowMs };
    case 3:
      return { algorithm: "token-bucket", capacity: limit, refillPerSecond: (limit * 1000) / windowMs };
    case 4:
      return { algorithm: "gcra", limit, periodMs: windowMs };
    default:
      return { algorithm: "leaky-bucket", capacity: limit, leakPerSecond: (limit * 1000) / windowMs };
  }
}

type L = ReturnType<typeof createLimiter>;

function run(seed: number, instances: number, hot: number): { evicted: number; rotations: number; compared: number } {
  const rnd = mulberry32(seed);
  const composite = rnd() < 0.3;
  const specR: AlgorithmSpec | AlgorithmSpec[] = composite ? [specOf(rnd), specOf(rnd)] : specOf(rnd);
  const specQ = specOf(rnd);
  // Half the seeds ban: read-back keys count strikes as a chain (test/threads/ban-readback.test.ts).
  const ban =
    rnd() < 0.5
      ? {
          after: 1 + Math.floor(rnd() * 3),
          withinMs: 20 + Math.floor(rnd() * 2000),
          forMs: 20 + Math.floor(rnd() * 4000),
        }
      : undefined;
  const clock = new ManualClock(1_800_000_000_000);
  // recordWords the widest of the two rules' records: they fill the blocks about as full as when
  // every record took all 16 words (records are as wide as their rule, compact/shared-bucket.ts),
  // so the flood still pushes thousands of entries through the table and rotates the filter.
  const recordWords = Math.max(
    widthFor(compileRule(([] as AlgorithmSpec[]).concat(specR), ban), 16),
    widthFor(compileRule([specQ]), 16),
  );
  const owner = new SharedMemoryStore({ maxKeys: 1, summaryWidth: 64, recordWords, seed });
  const stores = [owner, ...Array.from({ length: instances - 1 }, () => SharedMemoryStore.attach(owner.handle))];
  const opts = { clock, ...(ban === undefined ? {} : { ban }) };
  const sharedR = stores.map((store) => createLimiter(specR as never, { ...opts, store, name: "r" }) as L);
  const sharedQ = createLimiter(specQ as never, { clock, store: owner, name: "q" }) as L;
  const memory = new MemoryStore();
  const exactR = createLimiter(specR as never, { ...opts, store: memory, name: "r" }) as L;
  const exactQ = createLimiter(specQ as never, { clock, store: memory, name: "q" }) as L;
  const diverged = new Set<string>();
  const failures: string[] = [];
  let now = 1_800_000_000_000;
  let flood = 0;
  let compared = 0;
  const both = (s: L, m: L, key: string, op: string, cost: number, step: number) => {
    const call = (l: L) =>
      op === "check"
        ? l.tryAcquire(key, cost)
        : op === "peek"
          ? l.peek(key, cost)
          : op === "refund"
            ? l.refund(key, cost)
            : l.reset(key);
    const a = call(s) as { allowed: boolean } | undefined;
    const b = call(m) as { allowed: boolean } | undefined;
    if (op === "reset") {
      diverged.delete(key);
      return;
    }
    if (op === "refund" || a === undefined || b === undefined || diverged.has(key)) return;
    compared++;
    if (a.allowed && !b.allowed) failures.push(`seed ${seed} step ${step}: ${op} ${key} cost ${cost}`);
    else if (!a.allowed && b.allowed && op === "check") diverged.add(key);
  };
  for (let step = 0; step < 6000; step++) {
    now += rnd() < 0.95 ? Math.floor(rnd() * 4) : Math.floor(rnd() * 60);
    clock.set(now);
    const t = Math.floor(rnd() * instances);
    const x = rnd();
    if (x < 0.45) {
      const key = `hot-${Math.floor(rnd() * hot)}`;
      const y = rnd();
      const op = y < 0.7 ? "check" : y < 0.8 ? "peek" : y < 0.93 ? "refund" : "reset";
      both(sharedR[t] as L, exactR, key, op, 1 + Math.floor(rnd() * 2), step);
    } else if (x < 0.85) {
      const key = `flood-${flood++}`;
      const n = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < n; i++) both(sharedR[t] as L, exactR, key, "check", 1, step);
    } else {
      both(sharedQ, exactQ, `q-${flood++}`, "check", 1, step);
    }
  }
  expect(failures.slice(0, 10), `seed ${seed}, spec ${JSON.stringify({ specR, specQ, ban })}`).toEqual([]);
  const evicted = owner.stats().evicted;
  const rotations = Atomics.load(new Int32Array(owner.handle.buffer), H.filterEpoch);
  for (const s of stores) s.close();
  return { evicted, rotations, compared };
}

const SEEDS = Number(process.env.FUZZ_SEEDS ?? 6);

describe("summary filter: seeded differential fuzz against an uncapped MemoryStore", () => {
  for (const [instances, hot] of [
    [1, 12],
    [1, 300],
    [3, 12],
    [3, 300],
  ] as const) {
    it(`${instances} instance(s), ${hot} returning keys: every admission of the capped store, MemoryStore admits`, () => {
      let rotations = 0;
      let evicted = 0;
      for (let seed = 1; seed <= SEEDS; seed++) {
        const r = run(seed * 7919 + instances + hot, instances, hot);
        rotations += r.rotations;
        evicted += r.evicted;
      }
      console.log(`${instances}/${hot}: evicted ${evicted}, rotations ${rotations}`);
      expect(evicted).toBeGreaterThan(1000 * SEEDS);
      expect(rotations).toBeGreaterThan(SEEDS);
    }, 60_000);
  }
});

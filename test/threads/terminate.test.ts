// Threads killed mid-load: `worker.terminate()` stops a thread wherever it is, 100 times, while
// other threads keep deciding on the same keys. Nothing is ever left held: the survivors go on
// deciding (the test ends only if they do), no bucket is torn, and the totals stay exact — the
// store counts every admission any thread reported, plus at most the one decision each killed
// thread had in flight, and never more than the limit.
import fc from "fast-check";
import { createLimiter } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type RuleDef, spawnWorker } from "./support.ts";

beforeAll(() => ensureBuilt(), 180_000);

const NOW = 1_800_000_000_000;
const KEYS = ["k0", "k1", "k2", "k3", "k4", "k5"];
const KILLS = 100;
const RUNNING = 6;
/** Killed (and replaced) together: worker start-up, not deciding, is what takes the time. */
const BATCH = 4;
const SEED = 18_100;
const RULES: RuleDef[] = [
  // Never reached: every admission must be counted exactly.
  { name: "count", spec: { algorithm: "fixed-window", limit: 1e9, windowMs: 3_600_000 } },
  // Reached: never more than the limit, whoever dies.
  { name: "cap", spec: { algorithm: "gcra", limit: 2000, periodMs: 3_600_000 } },
];
const WIDTH = 2 + RULES.length;

/** Resolves once `test()` holds, checking every millisecond (the main thread must not block). */
async function until(test: () => boolean): Promise<void> {
  while (!test()) await new Promise((r) => setTimeout(r, 1));
}

describe("worker.terminate() mid-load, 100 times", () => {
  it("survivors keep deciding; every admission is counted once, none past the limit", async () => {
    const store = new SharedMemoryStore({ maxKeys: 1024 });
    const slots = KILLS + RUNNING;
    const control = new Int32Array(new SharedArrayBuffer(4 * (2 + WIDTH * slots)));
    const base = (slot: number) => 2 + WIDTH * slot;
    const decisions = (slot: number) => Atomics.load(control, base(slot));
    // When each kill happens: after a seeded number of the victim's own decisions (0: maybe
    // before it even attached).
    const [after] = fc.sample(fc.array(fc.integer({ min: 0, max: 400 }), { minLength: KILLS, maxLength: KILLS }), {
      seed: SEED,
      numRuns: 1,
    });
    let next = 0;
    const start = () => {
      const slot = next++;
      return {
        slot,
        ...spawnWorker<{ done: true }>(store.handle, {
          kind: "chaos",
          rules: RULES,
          control: control.buffer as SharedArrayBuffer,
          now: NOW,
          keys: KEYS,
          slot,
        }),
      };
    };
    const running = Array.from({ length: RUNNING }, start);
    let ambiguous = 0;
    for (let kill = 0; kill < KILLS; kill += BATCH) {
      await Promise.all(
        Array.from({ length: Math.min(BATCH, KILLS - kill) }, async (_, b) => {
          const i = (kill + b) % RUNNING;
          const victim = running[i] as (typeof running)[number];
          victim.result.catch(() => {}); // it will "exit before answering": that is the point
          const target = decisions(victim.slot) + (after?.[kill + b] ?? 0);
          await until(() => decisions(victim.slot) >= target);
          await victim.worker.terminate();
          // Killed with a decision in flight: the store may or may not have counted it.
          ambiguous += Atomics.load(control, base(victim.slot) + 1);
          running[i] = start();
        }),
      );
    }
    // Whoever is left (survivors and replacements) must still be deciding.
    const marks = running.map((r) => decisions(r.slot));
    await until(() => running.every((r, j) => decisions(r.slot) > (marks[j] as number) + 10));
    Atomics.store(control, 0, 1);
    await Promise.all(running.map((r) => r.result));

    const clock = { now: () => NOW };
    RULES.forEach((rule, r) => {
      let reported = 0;
      for (let s = 0; s < slots; s++) reported += Atomics.load(control, base(s) + 2 + r);
      // What the store holds, read through a limiter of the same name and spec in this thread.
      const limiter = createLimiter(rule.spec as never, { store, name: rule.name, clock });
      const counted = KEYS.reduce((n, key) => {
        const d = limiter.peek(key);
        return n + d.limit - (d.allowed ? d.remaining + 1 : d.remaining);
      }, 0);
      expect(counted, rule.name).toBeGreaterThanOrEqual(reported);
      expect(counted, rule.name).toBeLessThanOrEqual(reported + ambiguous);
      if (rule.name === "cap")
        expect(counted).toBe(KEYS.length * 2000); // reached, never passed
      else expect(reported).toBeGreaterThan(KEYS.length * 2000); // the load went on past the cap
    });
    expect(store.stats()).toMatchObject({ keys: 2 * KEYS.length, approximate: 0 });
  }, 180_000);
});

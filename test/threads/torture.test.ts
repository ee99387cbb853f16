// The atomic primitive under load: 8 threads hammer one key of every algorithm, a composite and
// a composite with a ban, all at one instant, with twice the limit in attempts. A lost update
// would admit more than the limit (two threads both taking the same last unit) or leave units
// untaken in the stored state (an update overwritten by a stale copy): the admissions are
// exactly the limit and the stored state says "full" afterwards.
import { createLimiter, type Decision } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type RuleDef, spawnWorker, startTogether } from "./support.ts";

beforeAll(() => ensureBuilt(), 180_000);

const THREADS = 8;
/** Worker start-up dominates on a busy 2-core machine: well above vitest's default 20 s. */
const SLOW = 90_000;
const NOW = 1_800_000_000_777;
const HOUR = 3_600_000;

async function hammer(store: SharedMemoryStore, rules: RuleDef[], rounds: number): Promise<number[]> {
  const control = new Int32Array(new SharedArrayBuffer(8));
  const workers = Array.from({ length: THREADS }, () =>
    spawnWorker<{ allowed: number[] }>(store.handle, {
      kind: "flood",
      rules,
      control: control.buffer as SharedArrayBuffer,
      now: NOW,
      keys: ["hot"],
      rounds,
      perRule: true,
    }),
  );
  const results = await startTogether(control, workers);
  return rules.map((_, r) => results.reduce((n, res) => n + (res.allowed[r] as number), 0));
}

function expectFull(store: SharedMemoryStore, rules: RuleDef[]): void {
  for (const rule of rules) {
    const limiter = createLimiter(rule.spec as never, {
      store,
      name: rule.name,
      clock: { now: () => NOW },
      ...(rule.ban === undefined ? {} : { ban: rule.ban }),
    });
    const d = limiter.peek("hot") as Decision;
    expect({ rule: rule.name, allowed: d.allowed, remaining: d.remaining }).toEqual({
      rule: rule.name,
      allowed: false,
      remaining: 0,
    });
  }
}

describe("no lost update: 8 threads, one key, every algorithm", () => {
  it(
    "fixed-window, sliding-window, token-bucket, gcra, leaky-bucket, composites, a ban: exactly the limit",
    async () => {
      const L = 4000;
      const rules: RuleDef[] = [
        { name: "fw", spec: { algorithm: "fixed-window", limit: L, windowMs: HOUR } },
        { name: "sw", spec: { algorithm: "sliding-window", limit: L, windowMs: HOUR } },
        { name: "tb", spec: { algorithm: "token-bucket", capacity: L, refillPerSecond: 0.001 } },
        { name: "gc", spec: { algorithm: "gcra", limit: L, periodMs: HOUR } },
        { name: "lb", spec: { algorithm: "leaky-bucket", capacity: L, leakPerSecond: 0.001 } },
        {
          name: "pair",
          spec: [
            { algorithm: "fixed-window", limit: L, windowMs: HOUR },
            { algorithm: "gcra", limit: L + 5, periodMs: HOUR },
          ],
        },
        {
          name: "banned",
          spec: [
            { algorithm: "token-bucket", capacity: L, refillPerSecond: 0.001 },
            { algorithm: "sliding-window", limit: L + 1, windowMs: HOUR },
          ],
          ban: { after: 3, withinMs: HOUR, forMs: HOUR },
        },
      ];
      const store = new SharedMemoryStore({ maxKeys: 64, recordWords: 8 });
      const admitted = await hammer(store, rules, (2 * L) / THREADS);
      expect(admitted).toEqual(rules.map(() => L));
      expectFull(store, rules);
    },
    SLOW,
  );

  it(
    "sliding-log (every timestamp in the record): exactly the limit",
    async () => {
      const L = 400;
      const rules: RuleDef[] = [{ name: "sl", spec: { algorithm: "sliding-log", limit: L, windowMs: HOUR } }];
      const store = new SharedMemoryStore({ maxKeys: 64, recordWords: L + 1 });
      const admitted = await hammer(store, rules, (2 * L) / THREADS);
      expect(admitted).toEqual([L]);
      expectFull(store, rules);
    },
    SLOW,
  );
});

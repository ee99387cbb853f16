// Leases past maxKeys (SPEC §16 "works on every store"; docs/semantics.md §10: a capped store may
// over-count, never under-count). Found by lease-differential.test.ts ("memory capped", seed
// 20261204): limit 3, one acquisition of cost 3, a flood of other keys at the same instant, then
// the key was admitted again with 2 slots free: its record, summarised, read back as no lease.
// Cause: the summary codec took a log member's window from `spec.windowMs`, which a concurrency
// spec does not have (leaseMs): NaN cells, read back as empty (fixed in summary-codec.ts).
import { createLimiter, type Decision, ManualClock, MemoryStore, type Store } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const T = 1_765_000_000_000;

/** Holds `costs` leases on "c", floods `flood` other keys at the same instant; returns c's free slots. */
function afterFlood(store: Store, limit: number, costs: number[], flood: number): number {
  const clock = new ManualClock(T);
  const l = createLimiter({ algorithm: "concurrency", limit, leaseMs: 60_000 }, { clock, store, name: "capped" });
  for (const c of costs) expect((l.tryAcquire("c", c) as Decision).allowed).toBe(true);
  for (let i = 0; i < flood; i++) l.tryAcquire(`f${i}`);
  clock.advance(1);
  const d = l.peek("c") as Decision;
  return d.allowed ? d.remaining + 1 : 0;
}

const stores: Array<[string, () => Store]> = [
  ["MemoryStore", () => new MemoryStore({ maxKeys: 16 })],
  ["SharedMemoryStore", () => new SharedMemoryStore({ maxKeys: 4, seed: 1 })],
];

describe.each(stores)("leases on a %s past maxKeys", (_name, make) => {
  it("a key's leases still count once its record is pushed out by a flood of other keys", () => {
    let checked = 0;
    for (const [limit, costs] of [
      [3, [3]],
      [3, [1, 1, 1]],
      [2, [2]],
      [3, [2]],
      [4, [1, 2]],
    ] as const) {
      for (const flood of [0, 20, 200]) {
        const free = afterFlood(make(), limit, [...costs], flood);
        const held = costs.reduce((a, b) => a + b, 0);
        // Over-counting is allowed past maxKeys; under-counting is not.
        expect(free, `limit ${limit}, costs ${costs}, flood ${flood}`).toBeLessThanOrEqual(limit - held);
        checked++;
      }
    }
    expect(checked).toBe(15);
  });
});

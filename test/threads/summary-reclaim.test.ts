// The summary's block pool backs only some rules' cells at once (src/stores/threads/params.ts):
// cells whose fresh-at has passed give their blocks back when the pool runs dry, so a store
// flooded past `maxKeys` under many rules admits new keys again once that flood no longer
// matters (before, the pool stayed empty for good and every new key was denied as `unplaced`).
import { createLimiter, ManualClock } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 2);
const WINDOW = { algorithm: "fixed-window", limit: 4, windowMs: 60_000 } as const;

describe("SharedMemoryStore summary pool", () => {
  it("a flood under 8 rules exhausts the pool; once it is stale, new keys are placed and admitted again", () => {
    const clock = new ManualClock(T0);
    const store = new SharedMemoryStore({ maxKeys: 48, seed: 1 });
    const limiters = Array.from({ length: 8 }, (_, r) => createLimiter(WINDOW, { store, clock, name: `r${r}` }));
    for (let i = 0; i < 2000; i++) for (const l of limiters) l.tryAcquire(`k${i}`);
    // The pool did run out (the case under test): keys went to their rule's overflow cell, none unplaced.
    expect(store.stats().overflowed).toBeGreaterThan(1000);
    expect(store.stats().unplaced).toBe(0);
    // Within the window every summarised key still counts: a flooded key is never admitted past
    // its limit, however the pool is refilled.
    clock.advance(59_000);
    for (let i = 0; i < 200; i++) for (let k = 0; k < 4; k++) limiters[0]?.tryAcquire(`k${i}`);
    // A day later the flood's cells are stale: one rule's 200 new keys are all placed and admitted.
    clock.advance(86_400_000);
    let admitted = 0;
    for (let i = 0; i < 200; i++) if (limiters[0]?.tryAcquire(`new${i}`).allowed) admitted++;
    expect(admitted).toBe(200);
  });

  it("a cell still live is never taken back: a summarised key stays counted past the pool running dry", () => {
    const clock = new ManualClock(T0);
    const store = new SharedMemoryStore({ maxKeys: 48, seed: 1 });
    const limiters = Array.from({ length: 8 }, (_, r) => createLimiter(WINDOW, { store, clock, name: `r${r}` }));
    // Spend key "victim"'s limit, then push it out into the summary by a flood under every rule.
    for (let k = 0; k < 4; k++) expect(limiters[0]?.tryAcquire("victim").allowed).toBe(true);
    for (let i = 0; i < 2000; i++) for (const l of limiters) l.tryAcquire(`k${i}`);
    // Still inside its window (1 s of reclaim margin past it is not reached): never admitted.
    clock.advance(30_000);
    for (let i = 0; i < 20; i++) {
      for (const l of limiters) l.tryAcquire(`more${i}`);
      expect(limiters[0]?.tryAcquire("victim").allowed).toBe(false);
    }
  });
});

// Rules of one store may run on different clocks (room.ts counts other rules' instants as live
// for that reason): a join decided on one rule's clock must not empty another rule's cells by it.
describe("SharedMemoryStore summary pool, rules on different clocks", () => {
  it("rules whose clock is a day ahead never take back another rule's live cells", () => {
    const behind = new ManualClock(T0);
    const ahead = new ManualClock(T0 + 86_400_000);
    const store = new SharedMemoryStore({ maxKeys: 48, seed: 1 });
    const victim = createLimiter(WINDOW, { store, clock: behind, name: "r0" });
    const others = Array.from({ length: 7 }, (_, r) =>
      createLimiter(WINDOW, { store, clock: ahead, name: `r${r + 1}` }),
    );
    for (let k = 0; k < 4; k++) expect(victim.tryAcquire("victim").allowed).toBe(true);
    // "victim" pushed out into r0's cells, live until T0 + 60 s on r0's clock.
    for (let i = 0; i < 2000; i++) victim.tryAcquire(`k${i}`);
    // The other rules run the pool dry on their clock, a day ahead (stopping early if r0's
    // cells were emptied, while the blocks they gave back are still free to place "victim").
    for (let i = 0; i < 2000 && !victim.peek("victim").allowed; i++) for (const l of others) l.tryAcquire(`k${i}`);
    expect(victim.peek("victim").allowed).toBe(false);
    expect(store.stats().overflowed).toBeGreaterThan(0);
    behind.advance(30_000);
    for (let k = 0; k < 8; k++) expect(victim.tryAcquire("victim").allowed).toBe(false);
  });
});

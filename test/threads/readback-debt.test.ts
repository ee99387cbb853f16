// Regression: a token bucket read back from the summary owes its debt as a balance, not as a
// bucket "empty until later". A penalty drives a key's balance below zero (token-bucket.ts
// `force`); a cell keeps the instant the key is full again, and the thread store read it back as
// { b: 0, t: that instant − capacity/rate }, an instant past `now`. Its refund gave a whole unit
// back at once (a state ahead of the clock reads as "no time passed", core semantics §2), where
// the key's own record, still in debt, only came up to a fraction of one.
//
// The trace (one thread; the same calls on an uncapped MemoryStore):
//   t=0    V: penalty of 3 on a bucket of 2 at 4/s: balance −1 token (full again at t=750).
//          300 other keys each spend their 2 tokens: V is pushed out into the summary.
//   t=10   V: refund of 1. Uncapped: −1 + 0.04 + 1 = 0.04 tokens. Capped: V read back as empty
//          until t=250, plus 1: one token.
//   t=10   V: a peek of one unit. Uncapped refuses; the capped store admitted it.
// Found by test/properties/ban-strict-replay.test.ts (seed 2187, SharedMemoryStore). MemoryStore
// decides a read-back key on its summary plus its own record and refunds only its own (and keeps
// this trace's V exact in its compact tier): it refused V in this trace before the fix too.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const SPEC = { algorithm: "token-bucket", capacity: 2, refillPerSecond: 4 } as const;
const T0 = 1_800_000_000_000;

describe("a token bucket in debt, read back from the summary", () => {
  for (const ban of [undefined, { after: 2, withinMs: 1000, forMs: 1000 }]) {
    it(`a refund does not pay its debt off at once: SharedMemoryStore({ maxKeys: 1 })${ban === undefined ? "" : ", with a ban"}`, () => {
      for (const seed of [1, 2, 3]) {
        const clock = new ManualClock(T0);
        // recordWords the rule's own width: its records fill the blocks eight to a bucket, the geometry
        // this test was sized for (records are as wide as their rule, compact/shared-bucket.ts).
        const store = new SharedMemoryStore({ maxKeys: 1, seed, recordWords: ban === undefined ? 3 : 5 });
        const options = { clock, name: "api", ...(ban === undefined ? {} : { ban }) };
        const capped = createLimiter(SPEC, { ...options, store });
        const exact = createLimiter(SPEC, { ...options, store: new MemoryStore() });
        capped.penalty("V", 3);
        exact.penalty("V", 3);
        for (let i = 0; i < 300; i++) capped.tryAcquire(`x${i}`, 2);
        clock.set(T0 + 10);
        // The premise: V is read back from the summary.
        expect(capped.refund("V", 1), `seed ${seed}`).toMatchObject({ approximate: true });
        exact.refund("V", 1);
        expect(exact.peek("V").allowed).toBe(false);
        expect(capped.peek("V").allowed, `seed ${seed}: admitted by the capped store only`).toBe(false);
        // And once the debt is paid (full again at t=750), both admit.
        clock.set(T0 + 760);
        expect(exact.peek("V", 2).allowed).toBe(true);
        expect(capped.peek("V").allowed, `seed ${seed}`).toBe(true);
        store.close();
      }
    });
  }
});

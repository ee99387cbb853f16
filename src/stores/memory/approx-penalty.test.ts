// Regression: a penalty on a key read back from the summary adds its backlog on top of the
// summary's, as an admission does. MemoryStore decides such a key on max(its cell + the backlog
// its own admissions added since the read-back, its own record's) for rate-based members (a
// backlog drains once: memory-store.ts `Approx`, summary-codec.ts `joinRateOwn`). A penalty was
// written on its own record only, not on that backlog: from a fresh own record it counted from
// `now` alone, as if the key had owed nothing before, and the maximum dropped the cell's part.
//
// The trace (one key V, and one other key to push it out; the same calls on an uncapped store):
//   t=0     V takes the one token of a bucket refilling 1 per second (full again at t=1000).
//           V is refused once (a strike: a ban with one keeps the record out of the compact tier).
//           "x" takes a token: V is pushed out into the summary.
//   t=10    V: penalty of 3. Uncapped: 0.01 − 3 tokens, full again at t=4000. Capped: its own
//           record (fresh at the read-back) 1 − 3, full again at t=3010; the cell at 1000.
//   t=3500  V: a peek of one token. Uncapped: 0.5 tokens, refused. The capped store admitted it.
// Found by test/properties/ban-strict-replay.test.ts (seed 4431: a composite of two buckets).
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = 1_800_000_000_000;
const BAN = { after: 5, withinMs: 100, forMs: 100 };

describe("a penalty on a key read back from the summary", () => {
  for (const spec of [
    { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
    { algorithm: "gcra", limit: 1, periodMs: 1000 },
    { algorithm: "leaky-bucket", capacity: 1, leakPerSecond: 1 },
  ] as const) {
    it(`adds its backlog to the summary's: ${spec.algorithm}`, () => {
      const clock = new ManualClock(T0);
      const store = new MemoryStore({ maxKeys: 1, seed: 1 });
      const capped = createLimiter(spec, { clock, store, ban: BAN });
      const exact = createLimiter(spec, { clock, store: new MemoryStore(), ban: BAN });
      expect([capped.tryAcquire("V").allowed, exact.tryAcquire("V").allowed]).toEqual([true, true]);
      // Refused: a strike, so V's record is not packed into the compact tier (packed-codec.ts).
      expect([capped.tryAcquire("V").allowed, exact.tryAcquire("V").allowed]).toEqual([false, false]);
      capped.tryAcquire("x");
      clock.set(T0 + 10);
      expect(capped.penalty("V", 3)).toMatchObject({ approximate: true }); // the premise: read back
      exact.penalty("V", 3);
      clock.set(T0 + 3500);
      expect(exact.peek("V").allowed).toBe(false);
      expect(capped.peek("V").allowed, "admitted by the capped store only").toBe(false);
      clock.set(T0 + 4100);
      expect(exact.peek("V").allowed).toBe(true);
    });
  }
});

// Attack on issue 34 from outside: "a key's cost per decision stays proportional to its length:
// a 1 KB key within 3× a 20-character key". Keys past `maxKeyBytes` (default 1,024 bytes) are
// hashed, and that path costs far more than the length explains. Measured on the built package
// (uncapped MemoryStore, gcra, 20,000 distinct keys each, load 34): 20 chars 4.9 µs, 1,000 chars
// 28.8 µs (5.9×), 1,100 chars 210 µs (43×), 3,000 chars 815 µs (168×); with maxKeys 1,000:
// 22.9 / 96 / 267 / 1,028 µs. A client sending 3 KB keys costs a core ~1 ms per request.
// This is a ratio of two timings taken in one run, interleaved, with a margin of ~3× over the
// bound the issue sets (a linear cost meeting "1 KB within 3×" gives ≤ 7× at 3,000 chars).
// Guess: src/core/digest.ts `sha256` (pure JS; `let [a, …] = h` destructures a Uint32Array per
// block) and src/core/key-bound.ts `wtf8` (a number[] pushed per code unit for every key).

import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

function keys(n: number, len: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) => `${tag}${String(i).padStart(8, "0")}${"y".repeat(len)}`.slice(0, len));
}

describe("attack: a long key's decision costs in proportion to its length", () => {
  it.fails("3,000-character keys within 20× the cost of 20-character keys (bug: ~40–170×)", { timeout: 20_000 }, () => {
    const onWarning = () => {};
    process.on("warning", onWarning);
    try {
      const clock = new ManualClock(1_800_000_000_000);
      const lim = createLimiter(
        { algorithm: "gcra", limit: 10, periodMs: 3_600_000 },
        { store: new MemoryStore(), clock, name: "long" },
      );
      const short = keys(3000, 20, "s");
      const long = keys(3000, 3000, "l");
      const time = (batch: string[]) => {
        const t0 = process.hrtime.bigint();
        for (const k of batch) lim.tryAcquire(k);
        return Number(process.hrtime.bigint() - t0);
      };
      for (let warm = 0; warm < 3; warm++) {
        time(keys(2000, 20, `w${warm}`));
        time(keys(200, 3000, `v${warm}`));
      }
      let s = 0;
      let l = 0;
      for (let round = 0; round < 6; round++) {
        s += time(short.slice(round * 500, round * 500 + 500));
        l += time(long.slice(round * 500, round * 500 + 500));
      }
      console.log(
        `20 chars ${(s / 3000 / 1000).toFixed(2)} µs, 3,000 chars ${(l / 3000 / 1000).toFixed(2)} µs, ratio ${(l / s).toFixed(1)}`,
      );
      expect(l / s).toBeLessThanOrEqual(20);
    } finally {
      process.off("warning", onWarning);
    }
  });
});

// A bare sliding log's one-word bound with more live entries than a unary code holds (issue 34):
// the wide counts code (62, 63, 63 per cell of the coarsest grid) keeps a log of 40 per 3 s used
// at three quarters of its limit on the grid instead of the drifting "all at the newest" word,
// and a word of the older 4-5-4-bit counts code (a state file's pair row) still reads back as it
// was written.
import { describe, expect, it } from "vitest";
import type { SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import { compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { decodeWord, encodeWord } from "./dense-codec.ts";
import { coarsestGrid, countsLog, isPayload, payloadWord } from "./log-bound.ts";

const rule = compileRule([validateSpec({ algorithm: "sliding-log", limit: 40, windowMs: 3000 }) as AlgorithmSpec]);
// Near the end of a 2,048-ms cell of the coarsest grid: that cell holds 21 of the 30 entries.
const T = 2 ** 40 + 4095;

/** The entries of `s`, oldest first. */
const entries = (s: SlidingLogState) => Array.from({ length: s.n }, (_, i) => s.buf[(s.head + i) % s.buf.length]);

describe("a bare log's wide counts code", () => {
  it("30 entries 100 ms apart: on the coarsest grid, every entry read at or after itself, none dropped", () => {
    const buf = Array.from({ length: 30 }, (_, i) => T - (29 - i) * 100);
    const word = encodeWord(rule, { buf, head: 0, n: 30 }) as number;
    expect(isPayload(word)).toBe(true);
    const back = entries(decodeWord(rule, word) as SlidingLogState) as number[];
    expect(back).toHaveLength(30);
    back.forEach((e, i) => {
      expect(e).toBeGreaterThanOrEqual(buf[i] as number);
    });
    expect(back[29]).toBe(T);
  });
  it("a word of the older 4-5-4-bit counts code reads back as that build wrote it", () => {
    const top = coarsestGrid(3000);
    // Cells 0, 1, 2: 3, 7 and 2 entries (cell 0's count less one in the top 4 bits).
    const code = ((3 - 1) * 2 ** 5 + 7) * 2 ** 4 + 2;
    const word = payloadWord(Math.floor(T / 2 ** 13), (T % 2 ** 13) * 2 ** 19 + top * 2 ** 14 + code);
    expect(entries(decodeWord(rule, word) as SlidingLogState)).toEqual(entries(countsLog([3, 7, 2], T, top)));
  });
});

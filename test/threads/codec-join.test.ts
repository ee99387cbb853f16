// The shared store's summary cell keeps the latest instant anything joined into it matters:
// joining an older record (fresh sooner) must not shorten it, or the cell would read empty while
// the later record's units still count (issue 20's named survivor in codec.ts `join`).
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../src/algorithms/specs.ts";
import { compileRule } from "../../src/core/rule.ts";
import { validateSpec } from "../../src/core/spec.ts";
import { codecFor, recordWordsOf } from "../../src/stores/threads/codec.ts";

const T = Date.UTC(2026, 11, 1);

describe("threads codec: summary join", () => {
  it("an older record joined later leaves the cell's fresh-at instant where it was", () => {
    const rule = compileRule([validateSpec({ algorithm: "fixed-window", limit: 5, windowMs: 1000 }) as AlgorithmSpec]);
    const codec = codecFor(rule, recordWordsOf(rule));
    const cells = new Float64Array(8).fill(Number.NaN);
    codec.join(cells, 0, { w: T + 1000, c: 2 }, T + 2000);
    codec.join(cells, 0, { w: T, c: 5 }, T + 1000);
    expect(cells[0]).toBe(T + 2000);
    expect(codec.read(cells, 0)).toEqual({ w: T + 1000, c: 2 });
    // A later record extends it.
    codec.join(cells, 0, { w: T + 2000, c: 1 }, T + 3000);
    expect(cells[0]).toBe(T + 3000);
  });
});

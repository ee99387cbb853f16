// The committed module is the .wat compiled (scripts/embed-wasm.mjs), and the word operations
// do what shared-table.ts relies on: the tag read atomically with the block, a publish that
// fails on any change of either half, the tag wrapping at 2^32, and a copy of whole words.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OUT, render } from "../../../scripts/embed-wasm.mjs";
import { bufferOf, sharedMemory, sharedWord } from "./shared-word.ts";

describe("shared-word.wat", () => {
  it("is what the committed module holds (else run node scripts/embed-wasm.mjs)", async () => {
    expect(readFileSync(OUT, "utf8")).toBe(await render());
  });

  it("reads, validates and publishes a 64-bit word as (tag, block) halves", () => {
    const memory = sharedMemory(1);
    const I = new Int32Array(bufferOf(memory));
    const a = sharedWord(memory);
    const b = sharedWord(memory);
    I[2] = 5; // block half
    I[3] = -1; // tag half: 2^32 - 1, the next publish wraps it to 0
    expect(a.read(2)).toBe(5);
    expect(b.read(2)).toBe(5);
    expect(a.unchanged()).toBe(1);
    expect(a.publish(9)).toBe(1);
    expect([I[2], I[3]]).toEqual([9, 0]);
    // b read the old word: its validation and its publish both fail, and change nothing.
    expect(b.unchanged()).toBe(0);
    expect(b.publish(7)).toBe(0);
    expect([I[2], I[3]]).toEqual([9, 0]);
    // A change of the block half alone fails them too.
    expect(b.read(2)).toBe(9);
    I[2] = 8;
    expect(b.unchanged()).toBe(0);
    expect(b.publish(7)).toBe(0);
    I[2] = 9;
    expect(b.publish(7)).toBe(1);
    expect([I[2], I[3]]).toEqual([7, 1]);
  });

  it("copies whole Int32 words, overlapping or not", () => {
    const memory = sharedMemory(1);
    const I = new Int32Array(bufferOf(memory));
    for (let i = 0; i < 16; i++) I[i] = i + 1;
    sharedWord(memory).copy(100, 3, 5);
    expect([...I.subarray(99, 106)]).toEqual([0, 4, 5, 6, 7, 8, 0]);
    sharedWord(memory).copy(1, 0, 4);
    expect([...I.subarray(0, 6)]).toEqual([1, 1, 2, 3, 4, 6]);
  });
});

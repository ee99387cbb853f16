// The committed module is the .wat compiled (scripts/embed-wasm.mjs), and the word operations
// do what shared-table.ts relies on: the tag read atomically with the block, a publish that
// fails on any change of either half, the tag wrapping at 2^32, and a copy of whole words.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OUT, render } from "../../../scripts/embed-wasm.mjs";
import { mulberry32 } from "../../core/seeded-random.ts";
import { countEntries, findEntry, PINNED, RETURNING, stateAt } from "./bucket.ts";
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
    // Blocks of 2 entries of 4 words from Int32 index 64: a's private block is 3, b's 4.
    for (const w of [a, b]) w.init(64, 8, 4);
    a.setSpare(3);
    b.setSpare(4);
    I[2] = 5; // block half: block 4 + 1
    I[3] = -1; // tag half: 2^32 - 1, the next publish wraps it to 0
    expect(a.read(2)).toBe(64 + 4 * 8);
    expect(b.read(2)).toBe(64 + 4 * 8);
    expect(a.unchanged()).toBe(1);
    expect(a.publish()).toBe(1);
    expect([I[2], I[3]]).toEqual([4, 0]);
    // The replaced block (4) is a's private block now.
    expect(a.spare()).toBe(4);
    // b read the old word: its validation and its publish both fail, and change nothing.
    expect(b.unchanged()).toBe(0);
    expect(b.publish()).toBe(0);
    expect([I[2], I[3]]).toEqual([4, 0]);
    expect(b.spare()).toBe(4);
    // A change of the block half alone fails them too.
    b.setSpare(6);
    b.read(2);
    I[2] = 8;
    expect(b.unchanged()).toBe(0);
    expect(b.publish()).toBe(0);
    I[2] = 4;
    expect(b.publish()).toBe(1);
    expect([I[2], I[3]]).toEqual([7, 1]);
  });

  it("takes a key: finds it past the pin bit, drafts the entries in use, marks the end, and marks the key returning unless it is the newest", () => {
    const memory = sharedMemory(1);
    const I = new Int32Array(bufferOf(memory));
    const E = 4;
    const w = sharedWord(memory);
    w.init(64, 8 * E, E);
    const bucket = (block: number) => 64 + block * 8 * E;
    // Block 0 holds 3 entries: (h1 11, tag 0x10001), (h1 12, tag 0x20001 | pin), (h1 13, tag 0x30001).
    const src = bucket(0);
    [11, 0x10001, 1, 2, 12, 0x28001, 3, 4, 13, 0x30001, 5, 6].forEach((v, i) => {
      I[src + i] = v;
    });
    I[src + 3 * E + 1] = 0;
    I[2] = 1; // bucket word: block 0
    // Absent keys: -1, nothing drafted (the private block untouched).
    w.setSpare(1);
    I[bucket(1) + 1] = 99;
    expect(w.take(2, 12, 0x10001, 1)).toBe(-1);
    expect(w.take(2, 14, 0x20001, 1)).toBe(-1);
    expect(I[bucket(1) + 1]).toBe(99);
    // Found without a draft: the state in the published bucket.
    expect(w.take(2, 12, 0x20001, 0)).toBe((src + E + 2) / 2);
    expect([w.base(), w.found(), w.count()]).toEqual([src, 1, 3]);
    // Found with a draft: the state in the private block, every entry copied, the end marked.
    I[bucket(1) + 3 * E + 1] = 77;
    expect(w.take(2, 12, 0x20001, 1)).toBe((bucket(1) + E + 2) / 2);
    const copied = [...I.subarray(src, src + 3 * E)];
    copied[E + 1] = ((copied[E + 1] as number) | RETURNING) >> 0; // entry 1 came back after entry 2 arrived
    expect([...I.subarray(bucket(1), bucket(1) + 3 * E)]).toEqual(copied);
    expect(I[bucket(1) + 3 * E + 1]).toBe(0);
    // The published bucket is not written, and the newest entry is drafted as it was.
    expect(I[src + E + 1]).toBe(0x20001 | PINNED);
    expect(w.take(2, 13, 0x30001, 1)).toBe((bucket(1) + 2 * E + 2) / 2);
    expect([...I.subarray(bucket(1), bucket(1) + 3 * E)]).toEqual([...I.subarray(src, src + 3 * E)]);
    // A returning entry is found (the bit is not part of the key).
    I[src + 1] = 0x10001 | RETURNING;
    expect(w.take(2, 11, 0x10001, 0)).toBe((src + 2) / 2);
    // No private block: -2.
    w.setSpare(-1);
    expect(w.take(2, 12, 0x20001, 1)).toBe(-2);
    // An empty bucket: -1.
    I[4] = 0;
    expect(w.take(4, 12, 0x20001, 1)).toBe(-1);
    expect(w.base()).toBe(-1);
  });

  it("finds and counts as the in-process table does (findEntry, countEntries), over seeded random buckets", () => {
    const SEED = 20261202;
    const random = mulberry32(SEED);
    const word = () => (random() * 0x100000000) >>> 0;
    const memory = sharedMemory(1);
    const U = new Uint32Array(bufferOf(memory));
    const E = 6;
    const w = sharedWord(memory);
    w.init(64, 8 * E, E);
    w.setSpare(1);
    const src = 64;
    for (let round = 0; round < 2000; round++) {
      // 0..8 entries with tags that may carry the pin bit and bit 31, fingerprints of any 32 bits;
      // some keys repeat with and without the pin bit (the scan must take the first).
      const count = Math.floor(random() * 9);
      const keys: [number, number][] = [];
      for (let e = 0; e < count; e++) {
        const reuse = keys.length > 0 && random() < 0.2;
        const [h1, tag] = reuse
          ? (keys[Math.floor(random() * keys.length)] as [number, number])
          : [word(), ((word() & 0xffff0000) | (1 + Math.floor(random() * 0x3ffe))) >>> 0];
        keys.push([h1, tag]);
        U[src + e * E] = h1;
        U[src + e * E + 1] = (tag | (random() < 0.3 ? PINNED : 0) | (random() < 0.3 ? RETURNING : 0)) >>> 0;
      }
      if (count < 8) U[src + count * E + 1] = 0;
      U[2] = 1; // the bucket word names block 0
      // A key of the bucket, or one that is not in it.
      const [h1, tag] =
        count > 0 && random() < 0.7 ? (keys[Math.floor(random() * count)] as [number, number]) : [word(), 0x10001];
      const expected = findEntry(U, src, E, h1, tag);
      const at = w.take(2, h1, tag, 0);
      const message = `seed ${SEED}, round ${round}`;
      expect(at, message).toBe(expected < 0 ? -1 : stateAt(src, E, expected));
      expect(w.found(), message).toBe(expected);
      expect(w.count(), message).toBe(countEntries(U, src, E));
      if (expected < 0) continue;
      // Drafted: the key's entry is returning when it was, or when a later entry is in use.
      const drafted = w.take(2, h1, tag, 1);
      const dst = 64 + 8 * E;
      expect(drafted, message).toBe(stateAt(dst, E, expected));
      const was = U[src + expected * E + 1] as number;
      const returning = (was & RETURNING) !== 0 || expected + 1 < count;
      expect(U[dst + expected * E + 1], message).toBe((returning ? was | RETURNING : was) >>> 0);
    }
  });
});

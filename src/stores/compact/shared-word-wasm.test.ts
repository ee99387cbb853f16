// The committed module is the .wat compiled (scripts/embed-wasm.mjs), and the word operations
// do what shared-table.ts relies on: the tag read atomically with the block, a publish that
// fails on any change of either half, the tag wrapping at 2^32, and a copy of whole words.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OUT, render } from "../../../scripts/embed-wasm.mjs";
import { mulberry32 } from "../../core/seeded-random.ts";
import { PINNED, RETURNING } from "./bucket.ts";
import { entrySize, H2_KEPT, KEY_TAG, READ_BACK, stateOf, usedWords, WIDTH_BITS, wideTag } from "./shared-bucket.ts";
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
    // Entries of the widest record (width code 0: R = 1 word, 4 Int32 words).
    w.init(64, 8 * E, 1);
    const bucket = (block: number) => 64 + block * 8 * E;
    // Block 0 holds 3 entries: (h1 11, tag 0x1000001), (h1 12, tag 0x2000001 | pin), (h1 13, tag 0x3000001).
    const src = bucket(0);
    [11, 0x1000001, 1, 2, 12, 0x2008001, 3, 4, 13, 0x3000001, 5, 6].forEach((v, i) => {
      I[src + i] = v;
    });
    I[src + 3 * E + 1] = 0;
    I[2] = 1; // bucket word: block 0
    // Absent keys: -1, nothing drafted (the private block untouched).
    w.setSpare(1);
    I[bucket(1) + 1] = 99;
    expect(w.take(2, 12, 0x1000001, 1)).toBe(-1);
    expect(w.take(2, 14, 0x2000001, 1)).toBe(-1);
    expect(I[bucket(1) + 1]).toBe(99);
    // Found without a draft: the state in the published bucket; the entry's offset, the entries and their words.
    expect(w.take(2, 12, 0x2000001, 0)).toBe((src + E + 2) / 2);
    expect([w.base(), w.found(), w.count(), w.used()]).toEqual([src, E, 3, 3 * E]);
    // Found with a draft: the state in the private block, every entry copied, the end marked.
    I[bucket(1) + 3 * E + 1] = 77;
    expect(w.take(2, 12, 0x2000001, 1)).toBe((bucket(1) + E + 2) / 2);
    const copied = [...I.subarray(src, src + 3 * E)];
    copied[E + 1] = ((copied[E + 1] as number) | RETURNING) >> 0; // entry 1 came back after entry 2 arrived
    expect([...I.subarray(bucket(1), bucket(1) + 3 * E)]).toEqual(copied);
    expect(I[bucket(1) + 3 * E + 1]).toBe(0);
    // The published bucket is not written, and the newest entry is drafted as it was.
    expect(I[src + E + 1]).toBe(0x2000001 | PINNED);
    expect(w.take(2, 13, 0x3000001, 1)).toBe((bucket(1) + 2 * E + 2) / 2);
    expect([...I.subarray(bucket(1), bucket(1) + 3 * E)]).toEqual([...I.subarray(src, src + 3 * E)]);
    // A returning entry is found (the bit is not part of the key).
    I[src + 1] = 0x1000001 | RETURNING;
    expect(w.take(2, 11, 0x1000001, 0)).toBe((src + 2) / 2);
    // No private block: -2.
    w.setSpare(-1);
    expect(w.take(2, 12, 0x2000001, 1)).toBe(-2);
    // An empty bucket: -1.
    I[4] = 0;
    expect(w.take(4, 12, 0x2000001, 1)).toBe(-1);
    expect(w.base()).toBe(-1);
  });

  it("finds and counts entries as wide as their rule as shared-bucket.ts walks them, over seeded random buckets", () => {
    const SEED = 20261202;
    const random = mulberry32(SEED);
    const word = () => (random() * 0x100000000) >>> 0;
    const memory = sharedMemory(1);
    const U = new Uint32Array(bufferOf(memory));
    const R = 6;
    const cap = 8 * (2 + 2 * R);
    const w = sharedWord(memory);
    w.init(64, cap, R);
    w.setSpare(1);
    const src = 64;
    const dst = 64 + cap;
    for (let round = 0; round < 2000; round++) {
      // Entries of widths 1..R until the block is full or a draw stops it, with tags that may
      // carry the pin and returning bits and bit 31; some keys repeat at another width and with
      // those bits (the scan must take the first, whatever its width).
      const keys: [number, number][] = [];
      let used = 0;
      while (random() < 0.9) {
        const width = 1 + Math.floor(random() * R);
        if (used + 2 + 2 * width > cap) break;
        const reuse = keys.length > 0 && random() < 0.2;
        const [h1, key] = reuse
          ? (keys[Math.floor(random() * keys.length)] as [number, number])
          : [word(), ((word() & H2_KEPT) | (1 + Math.floor(random() * 0x3ffe))) >>> 0];
        keys.push([h1, key]);
        U[src + used] = h1;
        const bits =
          (random() < 0.3 ? PINNED : 0) | (random() < 0.3 ? RETURNING : 0) | (random() < 0.3 ? READ_BACK : 0);
        U[src + used + 1] = (wideTag(key, key & 0x3fff, width, R) | bits) >>> 0;
        used += 2 + 2 * width;
      }
      if (used + 2 <= cap) U[src + used + 1] = 0;
      U[2] = 1; // the bucket word names block 0
      // A key of the bucket, or one that is not in it.
      const [h1, key] =
        keys.length > 0 && random() < 0.7
          ? (keys[Math.floor(random() * keys.length)] as [number, number])
          : [word(), 0x1000001];
      let expected = -1;
      let count = 0;
      for (let o = 0; o < used; o += entrySize(U, src + o, R), count++) {
        if (expected < 0 && U[src + o] === h1 && ((U[src + o + 1] as number) & KEY_TAG) >>> 0 === key) expected = o;
      }
      const at = w.take(2, h1, key, 0);
      const message = `seed ${SEED}, round ${round}`;
      expect(at, message).toBe(expected < 0 ? -1 : stateOf(src + expected));
      expect(w.found(), message).toBe(expected);
      expect([w.count(), w.used()], message).toEqual([count, used]);
      expect(usedWords(U, src, cap, R), message).toEqual({ entries: count, words: used });
      if (expected < 0) continue;
      // Drafted: the key's entry is returning when it was, or when a later entry is in use.
      // A draft takes only an entry of the width its tag names (the first entry's here).
      const drafted = w.take(2, h1, (key | ((U[src + expected + 1] as number) & WIDTH_BITS)) >>> 0, 1);
      expect(drafted, message).toBe(stateOf(dst + expected));
      const was = U[src + expected + 1] as number;
      const last = used - entrySize(U, src + expected, R) === expected;
      const returning = (was & RETURNING) !== 0 || !last;
      expect(U[dst + expected + 1], message).toBe((returning ? was | RETURNING : was) >>> 0);
      if (used + 2 <= cap) expect(U[dst + used + 1], message).toBe(0);
    }
  });
});

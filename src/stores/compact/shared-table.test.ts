// The shared table's compare-and-swap on its own, one thread playing several (each handle with
// its own WebAssembly instance, as each thread has): a bucket word is read as two 32-bit halves
// and the CAS operands are assembled from them (shared-word.wat), so these pin what that must keep: a stale read never publishes (also when the
// same block comes back: ABA), the tag wraps at 2^32 (through negative Int32 values), and a
// published draft is what every handle then reads.
import { describe, expect, it } from "vitest";
import { appendKey, entryU32, findEntry, stateAt } from "./bucket.ts";
import { blockBytes, initRegion, type SharedRegion, SharedTable, type SharedViews } from "./shared-table.ts";
import { bufferOf, sharedMemory, sharedWord } from "./shared-word.ts";

const STATE_WORDS = 2;

/** A region of 4 buckets and 8 blocks: W[0] free head, W[1..4] buckets, links at I[10..], blocks from u32 32. */
function region(): { views: SharedViews; r: SharedRegion; memory: WebAssembly.Memory } {
  const r: SharedRegion = {
    buckets: 4,
    stateWords: STATE_WORDS,
    blocks: 8,
    bucketBase: 1,
    freeHead: 0,
    nextBase: 10,
    blockBase: 32,
  };
  const memory = sharedMemory(32 * 4 + r.blocks * blockBytes(STATE_WORDS));
  const buffer = bufferOf(memory);
  const views = {
    W: new BigInt64Array(buffer),
    I: new Int32Array(buffer),
    F: new Float64Array(buffer),
    U32: new Uint32Array(buffer),
  };
  initRegion(views, r);
  return { views, r, memory };
}

const E = entryU32(STATE_WORDS);

/** Drafts bucket `b` with the key (h1, tag) holding `value`, and publishes; the CAS's answer. */
function write(t: SharedTable, b: number, h1: number, tag: number, value: number): boolean {
  t.read(b);
  const dst = t.draft();
  let e = findEntry(t.u32, dst, E, h1, tag);
  if (e < 0) {
    e = t.used / E;
    appendKey(t.u32, dst, E, e, h1, tag);
  }
  t.f64[stateAt(dst, E, e)] = value;
  return t.publish();
}

/** The value of (h1, tag) in bucket `b` as handle `t` reads it (undefined: absent). */
function value(t: SharedTable, b: number, h1: number, tag: number): number | undefined {
  t.read(b);
  const e = t.base < 0 ? -1 : findEntry(t.u32, t.base, E, h1, tag);
  return e < 0 ? undefined : t.f64[stateAt(t.base, E, e)];
}

describe("SharedTable: compare-and-swap on 32-bit halves", () => {
  it("publishes a draft that every handle then reads, and bumps the tag once per publish", () => {
    const { views, r, memory } = region();
    const a = new SharedTable(views, r, sharedWord(memory));
    const b = new SharedTable(views, r, sharedWord(memory));
    expect(write(a, 2, 7, 0x1000001, 1.5)).toBe(true);
    expect(write(a, 2, 8, 0x1000001, 2.5)).toBe(true);
    expect(value(b, 2, 7, 0x1000001)).toBe(1.5);
    expect(value(b, 2, 8, 0x1000001)).toBe(2.5);
    expect(value(b, 1, 7, 0x1000001)).toBeUndefined();
    expect(views.I[2 * (r.bucketBase + 2) + 1]).toBe(2);
  });

  it("a read made stale by another handle's publish neither validates nor publishes", () => {
    const { views, r, memory } = region();
    const a = new SharedTable(views, r, sharedWord(memory));
    const b = new SharedTable(views, r, sharedWord(memory));
    write(a, 0, 7, 0x1000001, 1);
    a.read(0);
    expect(a.unchanged()).toBe(true);
    expect(write(b, 0, 7, 0x1000001, 2)).toBe(true);
    expect(a.unchanged()).toBe(false);
    a.draft();
    expect(a.publish()).toBe(false);
    expect(value(b, 0, 7, 0x1000001)).toBe(2);
    // Decided again from the new state, it lands.
    expect(write(a, 0, 7, 0x1000001, 3)).toBe(true);
    expect(value(b, 0, 7, 0x1000001)).toBe(3);
  });

  it("a stale read fails even when the same block is published in the bucket again (ABA)", () => {
    const { views, r, memory } = region();
    const a = new SharedTable(views, r, sharedWord(memory));
    const b = new SharedTable(views, r, sharedWord(memory));
    write(b, 3, 7, 0x1000001, 1);
    a.read(3);
    const block = views.I[2 * (r.bucketBase + 3)];
    // b's spare is the block each publish replaces: two publishes bring `block` back.
    write(b, 3, 7, 0x1000001, 2);
    write(b, 3, 7, 0x1000001, 3);
    expect(views.I[2 * (r.bucketBase + 3)]).toBe(block);
    expect(a.unchanged()).toBe(false);
    a.draft();
    expect(a.publish()).toBe(false);
    expect(value(b, 3, 7, 0x1000001)).toBe(3);
  });

  it.each([
    [0x7fffffff, -0x80000000],
    [-1, 0],
  ])("the tag %i is followed by %i (wrapping at 2^32), and a read of the old tag is stale", (tag, next) => {
    const { views, r, memory } = region();
    const a = new SharedTable(views, r, sharedWord(memory));
    const b = new SharedTable(views, r, sharedWord(memory));
    const high = 2 * (r.bucketBase + 1) + 1;
    views.I[high] = tag;
    a.read(1);
    expect(write(b, 1, 7, 0x1000001, 4)).toBe(true);
    expect(views.I[high]).toBe(next);
    a.draft();
    expect(a.publish()).toBe(false);
    expect(write(a, 1, 7, 0x1000001, 5)).toBe(true);
    expect(value(b, 1, 7, 0x1000001)).toBe(5);
  });
});

// The in-process compact table's segmented FIFO: a full bucket gives up its oldest entry that is
// not returning, keeps up to MAX_RETURNING returning ones, and gives up the oldest returning
// one past that (or when every entry is returning). One bucket, fingerprints i → (i, i << 16).
import { describe, expect, it } from "vitest";
import { BUCKET_SLOTS, CompactTable, MAX_RETURNING } from "./compact-table.ts";

const h = (i: number) => Uint32Array.of(i, (i << 16) >>> 0, 7);

function fill(table: CompactTable, returning: (i: number) => boolean): void {
  for (let i = 1; i <= BUCKET_SLOTS; i++) table.claim(1, h(i), returning(i));
}

describe("CompactTable victims", () => {
  it("a full bucket gives up its oldest entry that is not returning", () => {
    const table = new CompactTable(1);
    fill(table, (i) => i <= 2); // keys 1 and 2 returning, the oldest
    table.claim(1, h(100));
    expect(table.victim.h1).toBe(3);
    expect(table.find(1, h(1))).toBeGreaterThanOrEqual(0);
    expect(table.returningAt(table.find(1, h(1)))).toBe(true);
    expect(table.returningAt(table.find(1, h(100)))).toBe(false);
  });

  it("past MAX_RETURNING returning entries, or with no other, the oldest returning goes", () => {
    const most = new CompactTable(1);
    fill(most, (i) => i <= MAX_RETURNING + 1);
    most.claim(1, h(100));
    expect(most.victim.h1).toBe(1);
    const all = new CompactTable(1);
    fill(all, () => true);
    all.claim(1, h(100), true);
    expect(all.victim.h1).toBe(1);
  });

  it("without returning entries, FIFO", () => {
    const table = new CompactTable(1);
    fill(table, () => false);
    table.claim(1, h(100));
    expect(table.victim.h1).toBe(1);
    expect(table.size).toBe(BUCKET_SLOTS);
  });
});

// The summary tier's rate members and bans, and `present`'s every-row rule, at fixed instants
// (sketch.test.ts covers fixed windows). Found open by the mutation run (docs/testing.md).
import { describe, expect, it } from "vitest";
import type { AlgorithmSpec } from "../../algorithms/specs.ts";
import type { TokenBucketState } from "../../algorithms/token-bucket.ts";
import type { BanPolicy } from "../../core/ban.ts";
import { type CompiledRule, compileRule, type RuleRecord } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import { cellSlots, Sketch } from "./sketch.ts";

const T0 = Date.UTC(2026, 11, 1);
const rule = (specs: unknown[], ban?: BanPolicy): CompiledRule =>
  compileRule(
    specs.map((s) => validateSpec(s) as AlgorithmSpec),
    ban,
  );
// 1 token per second: 1 thousandth per ms; full (2 tokens) is 2000 thousandths, 2000 ms to refill.
const TB = rule([{ algorithm: "token-bucket", capacity: 2, refillPerSecond: 1 }]);
const FRESH_TB: TokenBucketState = { b: 2000, t: Number.NEGATIVE_INFINITY };
const never = () => false;

describe("Sketch: rate-based members", () => {
  it("a bucket's cell is the instant it is full again; a key reads back empty until then", () => {
    const s = new Sketch(TB, 4);
    expect(cellSlots(TB)).toBe(2);
    s.add(1, 2, { b: 0, t: T0 }, T0);
    expect(s.freshAt).toBe(T0 + 2000);
    expect(s.present(1, 2, T0 + 1999)).toBe(true);
    expect(s.present(1, 2, T0 + 2000)).toBe(false);
    // Read back: the cell's instant is kept as the key's base, its own fresh bucket adds nothing.
    const rate = [0, Number.NaN];
    expect(s.present(1, 2, T0 + 500)).toBe(true);
    const read = s.estimate(FRESH_TB, rate, true, T0 + 500, never) as TokenBucketState;
    expect(rate[1]).toBe(T0 + 2000);
    expect(read.b).toBe(0);
    expect(read.t).toBeGreaterThanOrEqual(T0);
    expect(read.t).toBeLessThan(T0 + 0.1);
    // 1000 ms of backlog taken since the read-back: full again 1000 ms after the base.
    const owed = s.estimate(FRESH_TB, [1000, T0 + 2000], true, T0 + 500, never) as TokenBucketState;
    expect(owed.t).toBeGreaterThanOrEqual(T0 + 1000);
    expect(owed.t).toBeLessThan(T0 + 1000.1);
  });

  it("a base once kept is not replaced by a later cell", () => {
    const s = new Sketch(TB, 1);
    s.add(1, 2, { b: 0, t: T0 }, T0);
    const rate = [0, Number.NaN];
    s.present(1, 2, T0);
    s.estimate(FRESH_TB, rate, true, T0, never);
    s.add(3, 4, { b: 0, t: T0 + 1000 }, T0 + 1000); // the shared cell moves on
    s.present(1, 2, T0 + 1000);
    s.estimate(FRESH_TB, rate, true, T0 + 1000, never);
    expect(rate[1]).toBe(T0 + 2000);
  });

  it("a read-back key adds max(cell + debt, its own instant), not its backlog on top of the cell's", () => {
    // The key's own bucket is full again at T0 + 1500, inside the cell's T0 + 2000: with no debt
    // the cell stays at T0 + 2000 (summed backlogs would push it to T0 + 3000).
    const s = new Sketch(TB, 4);
    s.add(1, 2, { b: 0, t: T0 }, T0);
    s.add(1, 2, { b: 1000, t: T0 + 500 }, T0 + 500, [0, T0 + 2000]);
    expect(s.present(1, 2, T0 + 1999)).toBe(true);
    expect(s.present(1, 2, T0 + 2001)).toBe(false);
    // Without a read-back (no rate), the record joins by its maximum: still full at T0 + 2000
    // (summed, the backlogs would have pushed it to T0 + 3000).
    const joined = new Sketch(TB, 4);
    joined.add(1, 2, { b: 0, t: T0 }, T0);
    joined.add(1, 2, { b: 1000, t: T0 + 500 }, T0 + 500);
    expect(joined.present(1, 2, T0 + 1999)).toBe(true);
    expect(joined.present(1, 2, T0 + 2001)).toBe(false);
  });

  it("in a composite only the rate member takes the read-back path", () => {
    const mixed = rule([
      { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      { algorithm: "token-bucket", capacity: 2, refillPerSecond: 1 },
    ]);
    const s = new Sketch(mixed, 4);
    s.add(
      1,
      2,
      [
        { w: T0, c: 2 },
        { b: 0, t: T0 },
      ],
      T0,
    );
    s.add(
      1,
      2,
      [
        { w: T0, c: 1 },
        { b: 1000, t: T0 + 500 },
      ],
      T0 + 500,
      [0, Number.NaN, 0, T0 + 2000],
    );
    s.present(1, 2, T0 + 600);
    const read = s.estimate([{ w: Number.NEGATIVE_INFINITY, c: 0 }, FRESH_TB], [], true, T0 + 600, never) as [
      { w: number; c: number },
      TokenBucketState,
    ];
    expect(read).toHaveLength(2); // no ban slot read without a ban
    expect(read[0]).toEqual({ w: T0, c: 3 }); // counts add
    expect(read[1].t).toBeLessThan(T0 + 0.1); // the bucket: max(cell, own), full at T0 + 2000
    // The base a read-back keeps is the rate member's own slot (after the window's two).
    const rate = [0, Number.NaN, 0, Number.NaN];
    s.estimate([{ w: Number.NEGATIVE_INFINITY, c: 0 }, FRESH_TB], rate, true, T0 + 600, never);
    expect(rate[3]).toBeGreaterThanOrEqual(T0 + 2000);
    expect(rate[3]).toBeLessThan(T0 + 2000.1);
    // The window is no rate member: it keeps no base (its slot stays NaN, its debt 0).
    expect(rate.slice(0, 3)).toEqual([0, Number.NaN, 0]);
  });
});

describe("Sketch: rate arrays", () => {
  it("a read-back key joins its whole estimate (its row with what it took since on top); a record joins by its maximum", () => {
    const FW = rule([{ algorithm: "fixed-window", limit: 10, windowMs: 1000 }]);
    const cells = (s: Sketch) => s.estimate([{ w: T0, c: 0 }][0] as RuleRecord, [], true, T0, never);
    const a = new Sketch(FW, 4);
    const b = new Sketch(FW, 4);
    for (const s of [a, b]) {
      s.add(1, 2, { w: T0, c: 3 }, T0);
      expect(s.present(1, 2, T0)).toBe(true);
    }
    a.add(1, 2, { w: T0, c: 2 }, T0, []); // read back at 3, took 2 since: 5
    b.add(1, 2, { w: T0, c: 2 }, T0); // an exact record of 2: the cell keeps 3
    expect(cells(a)).toEqual({ w: T0, c: 5 });
    expect(cells(b)).toEqual({ w: T0, c: 3 });
    // Joined again, the same estimate counts once (a maximum is idempotent).
    const again = new Sketch(FW, 4);
    again.add(1, 2, { w: T0, c: 5 }, T0);
    again.add(1, 2, { w: T0, c: 5 }, T0);
    expect(cells(again)).toEqual({ w: T0, c: 5 });
  });
});

describe("Sketch: bans", () => {
  const BANNED = rule([{ algorithm: "fixed-window", limit: 5, windowMs: 1000 }], {
    after: 2,
    withinMs: 1000,
    forMs: 5000,
  });

  it("a ban keeps the cell live until it ends, and reads back with the key", () => {
    expect(cellSlots(BANNED)).toBe(1 + 2 + 3);
    const s = new Sketch(BANNED, 4);
    const record: RuleRecord = [
      { w: T0, c: 5 },
      { since: T0, n: 2, until: T0 + 5000 },
    ];
    s.add(1, 2, record, T0);
    expect(s.freshAt).toBe(T0 + 5000);
    expect(s.present(1, 2, T0 + 4999)).toBe(true);
    const fresh: RuleRecord = [
      { w: Number.NEGATIVE_INFINITY, c: 0 },
      { since: Number.NEGATIVE_INFINITY, n: 0, until: Number.NEGATIVE_INFINITY },
    ];
    expect(s.estimate(fresh, [], true, T0 + 100, never)).toEqual(record);
    expect(s.present(1, 2, T0 + 5000)).toBe(false);
  });

  it("denials without a ban keep the cell live for the ban's window", () => {
    const s = new Sketch(BANNED, 4);
    s.add(
      1,
      2,
      [
        { w: T0, c: 0 },
        { since: T0 + 300, n: 1, until: Number.NEGATIVE_INFINITY },
      ],
      T0 + 300,
    );
    expect(s.freshAt).toBe(T0 + 1300);
  });
});

describe("Sketch: present", () => {
  const FW = rule([{ algorithm: "fixed-window", limit: 5, windowMs: 1000 }]);

  it("a key's cells empty at their own instant, whatever later keys hold", () => {
    const s = new Sketch(FW, 1024); // wide: the two keys share no cell
    s.add(1, 2, { w: T0 + 1000, c: 2 }, T0 + 1000);
    s.add(3, 4, { w: T0, c: 5 }, T0 + 1000); // joined later, fresh sooner: the sketch's freshAt stays
    expect(s.freshAt).toBe(T0 + 2000);
    expect(s.present(1, 2, T0 + 1500)).toBe(true);
    expect(s.present(3, 4, T0 + 999)).toBe(true);
    expect(s.present(3, 4, T0 + 1000)).toBe(false); // its own cells end now
  });

  it("a key is present only when every row's cell is live", () => {
    // Width 4: keys (1, 2) and (1, 5) share rows 0 and 2 only (sketch.test.ts).
    const s = new Sketch(FW, 4);
    s.add(1, 5, { w: T0, c: 3 }, T0);
    expect(s.present(1, 5, T0)).toBe(true);
    expect(s.present(1, 2, T0)).toBe(false);
    expect(s.fill(T0)).toBe(4 / 16);
  });
});

/** A sketch's cells, decoded from its snapshot. */
const cellsOf = (s: Sketch) => [...new Float64Array(new Uint8Array(Buffer.from(s.toBase64(), "base64")).buffer)];

describe("Sketch: fold and snapshots", () => {
  const FW = rule([{ algorithm: "fixed-window", limit: 9, windowMs: 1000 }]);
  const BANNED = rule([{ algorithm: "token-bucket", capacity: 2, refillPerSecond: 1 }], {
    after: 2,
    withinMs: 1000,
    forMs: 5000,
  });
  /** Records for keys h1 = 0..7 (h2 = 9). */
  const keys = (record: (i: number) => RuleRecord) => Array.from({ length: 8 }, (_, i) => [i, 9, record(i)] as const);

  it.each([
    ["fixed windows", FW, (i: number): RuleRecord => ({ w: T0, c: 1 + (i % 3) })],
    [
      "a bucket with a ban",
      BANNED,
      (i: number): RuleRecord => [
        { b: 100 * i, t: T0 },
        { since: T0, n: i % 2, until: i === 3 ? T0 + 5000 : Number.NEGATIVE_INFINITY },
      ],
    ],
  ] as const)("folding 8 → 4 → 2 gives the cells a sketch of that width built directly has (%s)", (_, r, record) => {
    // A key's column at width w/2 is its column at width w masked by one bit less: cell j and
    // j + w/2 hold exactly the keys that share cell j at the half width.
    const folded = new Sketch(r, 8);
    for (const [h1, h2, rec] of keys(record)) folded.add(h1, h2, rec, T0);
    for (const width of [4, 2]) {
      folded.fold(T0);
      const direct = new Sketch(r, width);
      for (const [h1, h2, rec] of keys(record)) direct.add(h1, h2, rec, T0);
      expect(folded.width).toBe(width);
      // Equal up to the float nudges `up()` adds on each backlog sum (far below 0.1 ms).
      const a = cellsOf(folded);
      const b = cellsOf(direct);
      expect(a.length).toBe(b.length);
      a.forEach((x, i) => {
        if (Number.isNaN(x)) expect(b[i], `slot ${i}`).toBeNaN();
        else expect(Math.abs(x - (b[i] as number)), `slot ${i}: ${x} vs ${b[i]}`).toBeLessThan(0.1);
      });
    }
  });

  it("a fold drops a cell that stops mattering at the fold's instant, whichever side it is on", () => {
    // Width 2: a key's column alternates by row with its h1's parity (the stride is odd), so
    // keys 0 and 1 share no cell, and key 0 is on the absorbing side (j) in rows 0 and 2, the
    // absorbed side (j + 1) in rows 1 and 3. Key 1 stops mattering exactly at T0 + 1000 (its
    // window and its denials' span both end then). Joined, its denial span (from T0) overlaps
    // the live key's (from T0 + 500) and would add its 2 denials to the live key's 1.
    const r = rule([{ algorithm: "fixed-window", limit: 5, windowMs: 1000 }], {
      after: 3,
      withinMs: 1000,
      forMs: 5000,
    });
    const live: RuleRecord = [
      { w: T0 + 1000, c: 1 },
      { since: T0 + 500, n: 1, until: Number.NEGATIVE_INFINITY },
    ];
    const dead: RuleRecord = [
      { w: T0, c: 2 },
      { since: T0, n: 2, until: Number.NEGATIVE_INFINITY },
    ];
    const folded = new Sketch(r, 2);
    folded.add(0, 9, live, T0 + 1000);
    folded.add(1, 9, dead, T0);
    expect(folded.present(1, 9, T0 + 999)).toBe(true);
    folded.fold(T0 + 1000);
    const direct = new Sketch(r, 1);
    direct.add(0, 9, live, T0 + 1000);
    expect(cellsOf(folded)).toEqual(cellsOf(direct));
    expect(cellsOf(direct).slice(0, 6)).toEqual([T0 + 2000, T0 + 1000, 1, T0 + 500, 1, Number.NaN]);
  });

  it("a snapshot without extra records is the cells as they are; extra records never reach the sketch", () => {
    const empty = new Sketch(FW, 2);
    const nan = new Float64Array(4 * 2 * 3).fill(Number.NaN);
    expect(empty.toBase64()).toBe(Buffer.from(nan.buffer).toString("base64"));
    const s = new Sketch(FW, 4);
    s.add(1, 2, { w: T0, c: 3 }, T0);
    s.toBase64([[5, 6, { w: T0 + 1000, c: 4 }, { rate: [] }]], T0 + 1000);
    expect(s.fill(T0 + 1000)).toBe(0); // only the first key's cells, which end at T0 + 1000
  });
});

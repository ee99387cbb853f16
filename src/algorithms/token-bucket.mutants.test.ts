// The token bucket's state operations one by one (refund with and without a receipt, force,
// summary, freshAt), at fixed instants of today's epoch. Written for the mutation run's survivors
// (docs/testing.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import { type TokenBucketState, tokenBucket } from "./token-bucket.ts";

const T = Date.UTC(2026, 11, 1);
const INF = Number.POSITIVE_INFINITY;
// 2 tokens per second: 2 thousandths per ms; full is 5000 thousandths.
const tb = tokenBucket({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 2 });
const S: TokenBucketState = { b: 1000, t: T };

describe("token-bucket: state operations", () => {
  it("describes itself; fresh when full again, rounded up to a whole ms", () => {
    expect(tb).toMatchObject({ kind: "token-bucket", limit: 5, horizonMs: 2500, shape: "token-bucket/5/2" });
    expect(tokenBucket({ algorithm: "token-bucket", capacity: 5, refillPerSecond: 0.3 }).horizonMs).toBe(16_667);
    expect(tb.create()).toEqual({ b: 5000, t: -INF });
    expect(tb.freshAt(tb.create())).toBe(-INF);
    expect(tb.freshAt(S)).toBe(T + 2000);
    expect(tb.freshAt({ b: 999, t: T })).toBe(T + 2001);
    expect(tb.summary.slots).toBe(1);
  });

  // [now, cost, receipt, state after] from S = { b: 1000, t: T }
  const refunds: Array<[number, number, number | undefined, TokenBucketState]> = [
    [T + 500, 2, undefined, { b: 4000, t: T + 500 }], // refilled to 2000, then 2000 back
    [T + 500, 9, undefined, { b: 5000, t: T + 500 }], // never past full
    [T - 500, 2, undefined, { b: 3000, t: T }], // a clock stepped back refills nothing
    [T + 500, 2, T, { b: 3000, t: T + 500 }], // 1000 of the 2000 refilled since the check
    [T + 500, 2, T + 600, { b: 4000, t: T + 500 }], // a receipt from "later": nothing refilled since
    [T + 500, 2, T - 2000, { b: 2000, t: T + 500 }], // all of it refilled already
  ];
  it.each(refunds)("refund at %d, cost %d, receipt %s", (now, cost, at, after) => {
    const state = { ...S };
    tb.refund(state, now, cost, at);
    expect(state).toEqual(after);
  });

  const forces: Array<[number, number, TokenBucketState]> = [
    [T + 500, 3, { b: -1000, t: T + 500 }], // below zero: it refills from there
    [T - 500, 3, { b: -2000, t: T }],
  ];
  it.each(forces)("force at %d, cost %d", (now, cost, after) => {
    const state = { ...S };
    tb.force?.(state, now, cost);
    expect(state).toEqual(after);
  });

  it("a balance below zero reports no tokens and waits for the whole deficit", () => {
    expect(tb.step({ b: -1000, t: T }, T, 1, false)).toEqual({
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 3000,
      delayMs: 0,
    });
    expect(tb.step({ b: -1000, t: T }, T + 999, 1, false)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(tb.step({ b: -1000, t: T }, T + 1000, 1, false)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("summary: the instant the bucket is full again, nudged later, the latest kept", () => {
    const cells = new Float64Array([7, Number.NaN, 7]);
    tb.summary.join(cells, 1, S);
    const when = cells[1] as number;
    expect(when).toBeGreaterThan(T + 2000);
    expect(when).toBeLessThan(T + 2000.01);
    expect([cells[0], cells[2]]).toEqual([7, 7]);
    tb.summary.join(cells, 1, { b: 5000, t: T + 1000 }); // full at T + 1000: earlier, kept out
    expect(cells[1]).toBe(when);
    tb.summary.join(cells, 1, { b: 0, t: T }); // full at T + 2500: later, kept
    expect(cells[1]).toBeGreaterThan(T + 2500);
    // Read back as an empty bucket that fills at that instant.
    const read = tb.summary.read(cells, 1) as TokenBucketState;
    expect(read.b).toBe(0);
    expect(read.t).toBe((cells[1] as number) - 2500);
    expect(tb.summary.read(new Float64Array([1, Number.NaN]), 1)).toBeUndefined();
  });

  it("summary: a fresh bucket joins as never-full-again-later (-Infinity), not NaN", () => {
    const cells = new Float64Array([Number.NaN]);
    tb.summary.join(cells, 0, tb.create());
    expect(cells[0]).toBe(-INF);
    tb.summary.join(cells, 0, S);
    expect(cells[0]).toBeGreaterThan(T + 2000);
  });

  it("a hint the float estimate puts 5e-7 ms early is moved to the next whole ms", () => {
    // 3 per ms; deficit 21 + 1.5e-6 thousandths: 7.0000005 ms, which ceilMs reads as 7 (noise).
    // At +7 the balance is still 1.5e-6 short (more than the 1e-6 tolerance): the honest hint is 8.
    const three = tokenBucket({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 3 });
    const s: TokenBucketState = { b: 1000 - 21 - 1.5e-6, t: T };
    expect(three.step({ ...s }, T, 1, false)).toMatchObject({ allowed: false, retryAfterMs: 8 });
    expect(three.step({ ...s }, T + 7, 1, false).allowed).toBe(false);
    expect(three.step({ ...s }, T + 8, 1, false).allowed).toBe(true);
  });

  it("the float tolerance admits a sum that lands exactly on the need (tiny rate, at the epoch)", () => {
    // 1e-7 per ms: at +19,999,999,999 ms the balance is 1999.9999999 thousandths, and adding the
    // tolerance (eps = the rate, 1e-7) gives exactly 2000: 1 ms early, inside SPEC §5's bound.
    const slow = tokenBucket({ algorithm: "token-bucket", capacity: 2, refillPerSecond: 1e-7 });
    const s: TokenBucketState = { b: 0, t: T };
    expect(slow.step({ ...s }, T + 19_999_999_999, 2, false)).toMatchObject({ allowed: true, remaining: 0 });
    expect(slow.step({ ...s }, T + 19_999_999_998, 2, false).allowed).toBe(false);
  });

  it("a hint past 2^53 ms is returned as it is (the honesty loop cannot count there)", () => {
    // 2e-14 per ms: 5e16 ms to refill one token. At that magnitude instants are 8 ms apart, so the
    // balance at now + hint reads short of the need, and retry + 1 === retry: the loop must stop.
    const glacial = tokenBucket({ algorithm: "token-bucket", capacity: 1, refillPerSecond: 2e-14 });
    const d = glacial.step({ b: 0, t: T }, T + 3, 1, false);
    expect(d).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 49_999_999_999_999_990 });
  });
});

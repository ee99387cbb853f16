// The admission rule at fixed values: which priority is admitted with how many requests in
// flight, under a reserve and under event-loop pressure.
import { describe, expect, it } from "vitest";
import { admits, allowances, coveredLevels, fitsReserve, heldShares } from "./admission.ts";
import { PRIORITY_LEVELS } from "./pressure.ts";

const NONE = PRIORITY_LEVELS;

describe("heldShares and allowances", () => {
  it.each([
    { reserve: {}, limit: 10, allowed: [10, 10, 10, 10, 10, 10, 10, 10, 10, 10] },
    { reserve: { 1: 0.2 }, limit: 10, allowed: [10, 10, 8, 8, 8, 8, 8, 8, 8, 8] },
    { reserve: { 0: 0.1, 3: 0.2 }, limit: 10, allowed: [10, 9, 9, 9, 7, 7, 7, 7, 7, 7] },
    // A share of a slot holds the whole slot: the reserve is never smaller than asked.
    { reserve: { 1: 0.2 }, limit: 3, allowed: [3, 3, 2, 2, 2, 2, 2, 2, 2, 2] },
    { reserve: { 0: 0.5 }, limit: 1, allowed: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
    { reserve: { 8: 0.3 }, limit: 100, allowed: [100, 100, 100, 100, 100, 100, 100, 100, 100, 70] },
  ])("reserve $reserve of limit $limit", ({ reserve, limit, allowed }) => {
    expect(allowances(limit, heldShares(reserve))).toEqual(allowed);
  });
});

describe("allowances during an adaptive probe (steady limit above the probe's)", () => {
  it.each([
    // The levels a reserve covers keep their allowance of the steady limit; the rest get the probe's.
    { reserve: { 0: 0.75 }, limit: 4, steady: 20, allowed: [20, 1, 1, 1, 1, 1, 1, 1, 1, 1] },
    { reserve: { 1: 0.2 }, limit: 4, steady: 10, allowed: [10, 10, 3, 3, 3, 3, 3, 3, 3, 3] },
    { reserve: { 0: 0.1, 3: 0.2 }, limit: 4, steady: 10, allowed: [10, 9, 9, 9, 2, 2, 2, 2, 2, 2] },
    { reserve: { 8: 0.3 }, limit: 4, steady: 100, allowed: [100, 100, 100, 100, 100, 100, 100, 100, 100, 2] },
    { reserve: {}, limit: 4, steady: 100, allowed: [4, 4, 4, 4, 4, 4, 4, 4, 4, 4], why: "no reserve: all probe" },
  ])("reserve $reserve, probe at $limit, steady $steady", ({ reserve, limit, steady, allowed }) => {
    expect(allowances(limit, heldShares(reserve), steady)).toEqual(allowed);
  });
});

describe("admits", () => {
  const allowance = allowances(10, heldShares({ 1: 0.2 }));
  it.each([
    { inFlight: 0, priority: 9, cutoff: NONE, admitted: true },
    { inFlight: 7, priority: 5, cutoff: NONE, admitted: true },
    { inFlight: 8, priority: 5, cutoff: NONE, admitted: false, why: "the last 2 slots are held for 0–1" },
    { inFlight: 8, priority: 2, cutoff: NONE, admitted: false },
    { inFlight: 8, priority: 1, cutoff: NONE, admitted: true },
    { inFlight: 9, priority: 0, cutoff: NONE, admitted: true },
    { inFlight: 10, priority: 0, cutoff: NONE, admitted: false, why: "the limit holds for everyone" },
    { inFlight: 0, priority: 9, cutoff: 9, admitted: false, why: "pressure sheds 9 first" },
    { inFlight: 0, priority: 8, cutoff: 9, admitted: true },
    { inFlight: 0, priority: 1, cutoff: 1, admitted: false },
    { inFlight: 0, priority: 0, cutoff: 1, admitted: true },
  ])(
    "$inFlight in flight, priority $priority, cutoff $cutoff → $admitted",
    ({ inFlight, priority, cutoff, admitted }) => {
      expect(admits(inFlight, priority, allowance, cutoff)).toBe(admitted);
    },
  );

  it("keeps the reserve free under any flood of less critical traffic", () => {
    let inFlight = 0;
    for (let i = 0; i < 1000; i++) if (admits(inFlight, 2 + (i % 8), allowance, NONE)) inFlight++;
    expect(inFlight).toBe(8);
    let critical = 0;
    while (admits(inFlight + critical, 0, allowance, NONE)) critical++;
    expect(critical).toBe(2);
  });
});

describe("fitsReserve: less critical levels counted at most at their allowance", () => {
  // A cut from 40 to 4 with reserve { 0: 0.5 }: priority 0 is admitted against the steady 4,
  // the rest against 4 − 2. Nested { 0: 0.1, 3: 0.2 } of 10: 4–9 may use 7, 1–3 9, 0 all 10.
  const CUT = [4, 2, 2, 2, 2, 2, 2, 2, 2, 2];
  const NESTED = [10, 9, 9, 9, 7, 7, 7, 7, 7, 7];
  const levels = (counts: Record<number, number>) => Array.from({ length: PRIORITY_LEVELS }, (_, q) => counts[q] ?? 0);
  it.each([
    // A cut from 40 to 4 with reserve { 0: 0.5 }: the flood still holds 20 admitted under 40,
    // its allowance is now 2; priority 0's allowance (the steady limit) is 4.
    {
      counts: { 5: 20 },
      priority: 0,
      allowance: CUT,
      fits: true,
      why: "flood over its share: counted as 2",
    },
    { counts: { 0: 1, 5: 20 }, priority: 0, allowance: CUT, fits: true },
    {
      counts: { 0: 2, 5: 20 },
      priority: 0,
      allowance: CUT,
      fits: false,
      why: "the reserve's 2 slots are taken",
    },
    {
      counts: { 0: 3, 5: 1 },
      priority: 0,
      allowance: CUT,
      fits: false,
      why: "the limit holds",
    },
    // Nested { 0: 0.1, 3: 0.2 } of 10: 4–9 may use 7, 1–3 may use 9, 0 all 10.
    {
      counts: { 6: 9, 2: 0 },
      priority: 2,
      allowance: NESTED,
      fits: true,
      why: "nested: the flood counts 7",
    },
    {
      counts: { 6: 9, 2: 2 },
      priority: 2,
      allowance: NESTED,
      fits: false,
      why: "nested: 1–3 have their 2",
    },
    {
      counts: { 6: 9, 3: 5 },
      priority: 0,
      allowance: NESTED,
      fits: true,
      why: "nested: 0 keeps its own slot",
    },
    { counts: { 6: 9, 3: 5, 0: 1 }, priority: 0, allowance: NESTED, fits: false },
  ])("$counts, priority $priority → $fits", ({ counts, priority, allowance, fits }) => {
    expect(fitsReserve(levels(counts), priority, allowance)).toBe(fits);
  });

  it("coveredLevels: the levels some reserve covers", () => {
    expect(coveredLevels(heldShares({}))).toBe(0);
    expect(coveredLevels(heldShares({ 0: 0.5 }))).toBe(1);
    expect(coveredLevels(heldShares({ 0: 0.1, 3: 0.2 }))).toBe(4);
    expect(coveredLevels(heldShares({ 8: 0.3 }))).toBe(9);
  });
});

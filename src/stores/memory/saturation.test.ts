// Operators see it coming (issue 34): once a never-seen key is likely (over 1%) to be read back
// over-counted, the store warns once (SLUICE_STORE_SATURATED) naming the option to raise, and
// stats() shows each tier's fill and the error bound. A flood the budget holds warns nothing.
import { describe, expect, it } from "vitest";
import { warningsOf } from "../../../test/support/warnings.ts";
import { createLimiter, ManualClock, MemoryStore } from "../../index.ts";

const SPEC = { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 } as const;

function flood(store: MemoryStore, keys: number): void {
  const limiter = createLimiter(SPEC, { clock: new ManualClock(Date.UTC(2026, 11, 7, 10)), store });
  for (let k = 0; k < keys; k++) limiter.tryAcquire(`bot:${k}`);
}

describe("MemoryStore saturation", () => {
  it("warns once, naming maxBytes, when the flood outgrows the budget", async () => {
    const store = new MemoryStore({ maxKeys: 10, seed: 1 }); // 64 KiB past maxKeys
    const warnings = await warningsOf(() => flood(store, 60_000));
    const ours = warnings.filter((w) => w.code === "SLUICE_STORE_SATURATED");
    expect(ours).toHaveLength(1);
    expect(ours[0]?.message).toMatch(/raise `maxBytes` \(or `maxKeys`\)/);
    const s = store.stats();
    expect(s.summaryErrorBound).toBeGreaterThan(0.01);
    expect(s.filterKeys).toBeGreaterThan(0);
    // The filter's own false-positive rate bounds the summaries' (which also needs the cells live).
    expect(s.filterErrorBound).toBeGreaterThan(0.01);
    expect(s.summaryErrorBound).toBeLessThanOrEqual(s.filterErrorBound);
    expect(s.compactKeys).toBe(s.compactCapacity);
    expect(s.compactBytes + s.filterBytes + s.sketchBytes).toBeLessThanOrEqual(s.maxBytes);
  });

  it("a flood within the budget warns nothing", async () => {
    const store = new MemoryStore({ maxKeys: 1_000, seed: 1 });
    const warnings = await warningsOf(() => flood(store, 60_000));
    expect(warnings.filter((w) => w.code === "SLUICE_STORE_SATURATED")).toEqual([]);
    expect(store.stats().summaryErrorBound).toBeLessThan(0.01);
    expect(store.stats().filterErrorBound).toBeLessThan(0.01);
  });
});

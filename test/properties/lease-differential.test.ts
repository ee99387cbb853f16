// The attack on SPEC §16's concurrency spec (issue 33): seeded random traces of acquisitions
// (cost 1..3), releases (own receipts by handle or by receipt, double, stale), renewals (held,
// expired, released), clock moves, resets, updateRule (limit up and down), penalties, blocks,
// composites with a sliding-log rate member, and MemoryStore snapshot/restore, compared with an
// independent model (lease-oracle.ts). Exact traces compare every answer; safety traces (clock
// steps back, a capped store under floods of other keys) check that no admission takes a key
// past its limit in flight. Each failure names its seed; SLUICE_SEED=<n> runs that seed first.
import { MemoryStore, type Store } from "sluice";
import { describe, expect, it } from "vitest";
import { runs, SEED } from "../support/seed.ts";
import { runLeaseTrace, type TraceOptions } from "./lease-trace.ts";

const seedsFrom = (n: number) => Array.from({ length: runs(n) }, (_, i) => (SEED + i) >>> 0);

/** Runs `n` seeds of `opts`; fails with every violation found (seed and trace tail). */
async function sweep(label: string, n: number, opts: Omit<TraceOptions, "seed">, minimums: Record<string, number>) {
  const seeds = seedsFrom(n);
  console.log(`${label}: seeds ${seeds[0]}..${seeds[seeds.length - 1]} (${seeds.length} traces)`);
  const total: Record<string, number> = {};
  const violations: string[] = [];
  for (const seed of seeds) {
    const { violations: v, counts } = await runLeaseTrace({ ...opts, seed });
    violations.push(...v);
    for (const [k, c] of Object.entries(counts)) total[k] = (total[k] ?? 0) + c;
  }
  console.log(`${label}: ${JSON.stringify(total)}`);
  expect(violations.slice(0, 3).join("\n\n")).toBe("");
  for (const [k, min] of Object.entries(minimums)) {
    expect(total[k] ?? 0, `${label} exercised "${k}" too rarely`).toBeGreaterThanOrEqual(Math.floor(runs(min) * 0.8));
  }
}

/** A MemoryStore's snapshot restored into a new one (a restart). */
const restartMemory = (old: Store): Store => {
  const text = (old as MemoryStore).snapshot(Number.NaN);
  const fresh = new MemoryStore();
  fresh.restore(text);
  return fresh;
};

const EXACT_MINIMUMS = {
  "acquire allowed": 2000,
  "acquire denied": 500,
  "release held": 500,
  "release stale": 50,
  "double release": 100,
  "release stale receipt": 100,
  "renew held": 300,
  "renew not held": 50,
  reset: 50,
  "update limit": 100,
  penalty: 50,
  block: 50,
  "peek compared": 5000,
};

describe("leases against an independent model", () => {
  it("MemoryStore, uncapped: every answer as the model says", async () => {
    await sweep("memory exact", 150, { store: () => new MemoryStore(), exact: true, restart: restartMemory }, EXACT_MINIMUMS);
  });
});

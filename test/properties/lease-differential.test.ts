// The attack on SPEC §16's concurrency spec (issue 33): seeded random traces of acquisitions
// (cost 1..3), releases (own receipts by handle or by receipt, double, stale), renewals (held,
// expired, released), clock moves, resets, updateRule (limit up and down), penalties, blocks,
// composites with a sliding-log rate member, and MemoryStore snapshot/restore, compared with an
// independent model (lease-oracle.ts). Exact traces compare every answer; safety traces (clock
// steps back, a capped store under floods of other keys) check that no admission takes a key
// past its limit in flight. Each failure names its seed; SLUICE_SEED=<n> runs that seed first.
import { MemoryStore, type Store } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
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
const restartMemory = (old: Store, now: number): Store => {
  const text = (old as MemoryStore).snapshot(now);
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

const SAFETY_MINIMUMS = { "acquire allowed": 2000, "acquire denied": 500, "release held": 400, "renew held": 200 };

describe("leases against an independent model", () => {
  it("MemoryStore, uncapped: every answer as the model says", async () => {
    await sweep(
      "memory exact",
      150,
      { store: () => new MemoryStore(), exact: true, restart: restartMemory },
      { ...EXACT_MINIMUMS, restart: 100 },
    );
  });

  it("SharedMemoryStore, room for every key: every answer as the model says", async () => {
    const store = () => new SharedMemoryStore({ maxKeys: 4096, seed: 7, recordWords: 24 });
    await sweep("threads exact", 100, { store, exact: true }, scaled(EXACT_MINIMUMS, 100 / 150));
  });

  it("MemoryStore, the clock stepping back a few ms: never past the limit", async () => {
    await sweep(
      "memory step back",
      150,
      { store: () => new MemoryStore(), exact: false, stepBack: true, restart: restartMemory },
      { ...SAFETY_MINIMUMS, "step back": 300 },
    );
  });

  it("MemoryStore past maxKeys under floods of other keys: never past the limit", async () => {
    await sweep(
      "memory capped",
      60,
      { store: () => new MemoryStore({ maxKeys: 16 }), exact: false, flood: true },
      { ...scaled(SAFETY_MINIMUMS, 60 / 150), flood: 100 },
    );
  });

  it("SharedMemoryStore past maxKeys under floods of other keys: never past the limit", async () => {
    await sweep(
      "threads capped",
      40,
      {
        store: () => new SharedMemoryStore({ maxKeys: 8, seed: 3, recordWords: 24 }),
        exact: false,
        flood: true,
        stepBack: true,
      },
      { ...scaled(SAFETY_MINIMUMS, 40 / 150), flood: 60 },
    );
  });

  // Was broken until the lease branch (lease-known.test.ts has the minimal traces): a held
  // lease's renewal was denied after updateRule lowered the limit (e.g. seed 20261220).
  it("MemoryStore, updateRule lowering the limit: every answer as the model says", async () => {
    await sweep("memory exact, limit down", 150, { store: () => new MemoryStore(), exact: true, limitDown: true }, {});
  });

  // Was broken until the lease branch: updateRule with a new leaseMs started the key fresh, and
  // admitted `limit` more beside the leases in flight.
  it("MemoryStore, updateRule changing leaseMs: never past the limit", async () => {
    await sweep(
      "memory leaseMs change",
      150,
      { store: () => new MemoryStore(), exact: false, leaseMsChange: true },
      {},
    );
  });
});

/** Minimums for a sweep of a fraction of the seeds. */
function scaled(m: Record<string, number>, f: number): Record<string, number> {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.floor(v * f)]));
}

// sluice/cluster with real processes: a node:cluster primary (fixtures/primary.mjs, built
// package) forking workers that share one limit through the primary's MemoryStore.
import cluster from "node:cluster";
import { ArgumentError } from "sluice";
import { ClusterStore, startClusterStore } from "sluice/cluster";
import { describe, expect, it } from "vitest";
import { runPrimary } from "./run-primary.ts";

interface Stats {
  admitted: number;
  failures: number;
  sent: number;
}

describe("sluice/cluster across real worker processes", () => {
  it("4 workers hammering one key admit exactly the limit in total", async () => {
    const limit = 1500;
    const out = await runPrimary<{ reports: Array<Stats & { index: number }> }>("hammer", { limit, checks: 1000 });
    expect(out.reports).toHaveLength(4);
    expect(out.reports.map((r) => r.failures)).toEqual([0, 0, 0, 0]);
    expect(out.reports.map((r) => r.sent)).toEqual([1000, 1000, 1000, 1000]);
    expect(out.reports.reduce((n, r) => n + r.admitted, 0)).toBe(limit);
  });

  it("operations issued in one turn travel as one IPC message and come back as one", async () => {
    const out = await runPrimary<{
      reports: Array<{ allowed: number; replies: number; remaining: number }>;
      batches: number[];
    }>("batching", { workers: 1 });
    expect(out.batches).toEqual([100, 100]);
    expect(out.reports[0]).toEqual({ index: 0, allowed: 150, replies: 2, remaining: 0 });
  });

  it("state outlives workers: 4 workers one after another (each exits before the next starts) share one limit", async () => {
    const limit = 1500;
    const out = await runPrimary<{ reports: Array<Stats & { index: number }> }>("relay", { limit, checks: 1000 });
    expect(out.reports.map((r) => r.index)).toEqual([0, 1, 2, 3]);
    expect(out.reports.map((r) => r.admitted)).toEqual([1000, 500, 0, 0]);
  });

  it("a worker killed with checks in flight harms nothing: the others continue and stay exact", async () => {
    const limit = 1000;
    const out = await runPrimary<{
      reports: Array<{ index: number; before: Stats; after: Stats }>;
      exited: Array<{ index: number; signal: string | null; code: number | null }>;
      remainingA: number;
    }>("kill", { limit, checks: 2000 });
    expect(out.exited.find((e) => e.index === 0)?.signal).toBe("SIGKILL");
    expect(out.exited.filter((e) => e.index !== 0).map((e) => e.code)).toEqual([0, 0, 0]);
    expect(out.reports.map((r) => r.index)).toEqual([1, 2, 3]);
    for (const r of out.reports) {
      expect(r.before.failures).toBe(0);
      expect(r.after.failures).toBe(0);
    }
    // Key "a" was shared with the victim: never more than the limit, and the store holds it spent.
    expect(out.reports.reduce((n, r) => n + r.before.admitted, 0)).toBeLessThanOrEqual(limit);
    expect(out.remainingA).toBe(0);
    // Key "b", after the kill: exactly the limit across the survivors.
    expect(out.reports.reduce((n, r) => n + r.after.admitted, 0)).toBe(limit);
  });

  it("no store in the primary: every check settles by its onError policy after timeoutMs", async () => {
    const timeoutMs = 300;
    type Settled = { allowed?: boolean; policy?: string; code?: string; rejected?: string };
    const out = await runPrimary<{ reports: Array<Record<string, { ms: number; settled: Settled[] }>> }>(
      "unreachable",
      { timeoutMs, workers: 1 },
    );
    const r = out.reports[0] as Record<string, { ms: number; settled: Settled[] }>;
    const timeout = "ERR_STORE_TIMEOUT";
    expect(r.deny?.settled).toEqual([
      { allowed: false, policy: "deny", code: timeout },
      { allowed: false, policy: "deny", code: timeout },
    ]);
    expect(r.allow?.settled).toEqual([
      { allowed: true, policy: "allow", code: timeout },
      { allowed: true, policy: "allow", code: timeout },
    ]);
    expect(r.throw?.settled).toEqual([{ rejected: timeout }, { rejected: timeout }]);
    // The fallback limiter allows 1: the second check of the same key is denied by it.
    expect(r.fallback?.settled).toEqual([
      { allowed: true, policy: "fallback", code: timeout },
      { allowed: false, policy: "fallback", code: timeout },
    ]);
    // Bounded by timeoutMs (with a loose margin for a loaded machine), never hanging.
    for (const name of ["deny", "allow", "throw", "fallback"]) {
      expect(r[name]?.ms).toBeGreaterThanOrEqual(timeoutMs - 5);
      expect(r[name]?.ms).toBeLessThan(timeoutMs + 1500);
    }
  });
});

describe("sluice/cluster options", () => {
  it("refuses unknown and malformed options with ArgumentError naming them", () => {
    expect(() => new ClusterStore({ timeout: 5 } as never)).toThrow(ArgumentError);
    expect(() => new ClusterStore({ timeout: 5 } as never)).toThrow(/unknown option `timeout`/);
    expect(() => new ClusterStore({ timeoutMs: 0 })).toThrow(/timeoutMs.*got 0/);
    expect(() => new ClusterStore({ onError: "ignore" as never })).toThrow(/onError.*"ignore"/);
    expect(() => startClusterStore({ maxkeys: 5 } as never)).toThrow(/unknown option `maxkeys`/);
    expect(() => startClusterStore({ maxKeys: -1 })).toThrow(/maxKeys.*got -1/);
  });

  it("ClusterStore outside a node:cluster worker is an ArgumentError", () => {
    // vitest's own child processes have an IPC channel, but to vitest, not to a cluster primary.
    expect(cluster.isWorker).toBe(false);
    expect(() => new ClusterStore()).toThrow(ArgumentError);
    expect(() => new ClusterStore()).toThrow(/node:cluster worker/);
  });
});

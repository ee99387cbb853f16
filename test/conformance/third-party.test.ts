// The third-party store of examples/third-party-store (an async Map with compare-and-set,
// importing only the package's public entries) passes the conformance kit. The kit itself can
// fail: the same store with its compare-and-set, its receipts or its resets broken fails the
// cases that cover them.
import type { BoundRule, Store } from "sluice";
import { storeConformance } from "sluice/testing";
import { describe, expect, it } from "vitest";
import { CasMap } from "../../examples/third-party-store/cas-map.ts";
import { CasStore } from "../../examples/third-party-store/cas-store.ts";
import { runCases } from "../support/conformance.ts";

describe("a third-party store (examples/third-party-store)", () => {
  runCases(storeConformance({ name: "CasStore", create: () => new CasStore(new CasMap()) }));
});

/** `store` with each bound rule's calls passed through `change`. */
function broken(store: Store, change: (bound: BoundRule) => Partial<BoundRule>): Store {
  return {
    synchronous: store.synchronous,
    flexibleCalls: true,
    bind: (binding) => {
      const bound = store.bind(binding);
      return { ...bound, ...change(bound) };
    },
  };
}

/** The names of the kit's cases `create`'s stores fail. */
async function failing(create: () => Store): Promise<string[]> {
  const failed: string[] = [];
  for (const c of storeConformance({ name: "broken", create })) {
    if (c.skip !== undefined) continue;
    await c.run().catch(() => failed.push(c.name.replace("broken: ", "")));
  }
  return failed;
}

describe("the kit finds broken stores", () => {
  it("a store whose writes are not compare-and-set (last write wins) fails the concurrency case", async () => {
    // Every write succeeds whatever was read (retried until it lands): concurrent checks
    // decided on the same record overwrite each other.
    const blind = () => {
      const map = new CasMap();
      return {
        get: (key: string) => map.get(key),
        delete: (key: string) => map.delete(key),
        compareAndSet: async (key: string, _expected: number | undefined, value: string) => {
          for (;;) if (await map.compareAndSet(key, (await map.get(key))?.version, value)) return true;
        },
      } as unknown as CasMap;
    };
    expect(await failing(() => new CasStore(blind()))).toEqual([
      "concurrency: 40 concurrent calls on one key are decided one at a time",
    ]);
  });

  it("a store that drops refund receipts fails the receipts case (and the trace using them)", async () => {
    const failed = await failing(() =>
      broken(new CasStore(new CasMap()), (b) => ({ check: (key, cost, now, op) => b.check(key, cost, now, op) })),
    );
    expect(failed).toContain("refunds with receipts: only what that check took and still counts");
  });

  it("a store whose reset does nothing fails the resets case", async () => {
    const failed = await failing(() => broken(new CasStore(new CasMap()), () => ({ reset: async () => {} })));
    expect(failed).toContain("resets: the key's next decisions are a fresh key's, in every member and tier");
  });
});

// The store conformance kit (sluice/testing) on the in-process MemoryStore.
import { MemoryStore } from "sluice";
import { storeConformance } from "sluice/testing";
import { describe, it } from "vitest";

describe("MemoryStore conformance", () => {
  for (const c of storeConformance({ name: "MemoryStore", create: () => new MemoryStore() })) {
    it.skipIf(c.skip !== undefined)(c.skip === undefined ? c.name : `${c.name} (skipped: ${c.skip})`, () => c.run());
  }
});

// The store conformance kit (sluice/testing) on the in-process MemoryStore.
import { MemoryStore } from "sluice";
import { storeConformance } from "sluice/testing";
import { describe } from "vitest";
import { runCases } from "../support/conformance.ts";

describe("MemoryStore conformance", () => {
  runCases(storeConformance({ name: "MemoryStore", create: () => new MemoryStore() }));
});

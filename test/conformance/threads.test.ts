// The store conformance kit (sluice/testing) on SharedMemoryStore (the owning thread's side).

import { storeConformance } from "sluice/testing";
import { SharedMemoryStore } from "sluice/threads";
import { describe } from "vitest";
import { runCases } from "../support/conformance.ts";

describe("SharedMemoryStore conformance", () => {
  runCases(
    storeConformance({
      name: "SharedMemoryStore",
      create: () => new SharedMemoryStore({ maxKeys: 1000, recordWords: 32 }),
      dispose: (store) => store.close(),
    }),
  );
});

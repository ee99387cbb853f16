// The tests Stryker runs against each mutant (npm run mutate): only the fast unit and property
// tests of the mutated files, no Redis, cluster or server suites, so one run fits on one core.
// SLUICE_MUTATE_TESTS (comma-separated globs) narrows the list further for a one-file run, e.g.
//   SLUICE_MUTATE_TESTS=src/http/headers.test.ts npx stryker run --mutate src/http/headers.ts
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

const ALL = [
  "src/algorithms/*.test.ts",
  "src/core/decide-rule.test.ts",
  // The edges, read-back bans and rate-limiter-flexible's calls reach decide-rule.ts and ban.ts
  // where the plain tables do not (without them those files scored 60–69%).
  "src/core/decide-rule.edges.test.ts",
  // Which operations write the record back (changesStoredRecord / storesNewRecord), as a full table.
  "src/core/decide-rule.write-back.test.ts",
  "src/core/ban.read-back.test.ts",
  "src/rlf-calls.test.ts",
  "src/core/composite.test.ts",
  "src/core/ban.test.ts",
  "src/core/ban.edges.test.ts",
  "src/core/rule.test.ts",
  "src/limiter.test.ts",
  "src/service.test.ts",
  "src/replay.test.ts",
  "src/core/spec.test.ts",
  "src/http/headers.test.ts",
  "src/http/client-key.test.ts",
  "src/http/client-key.edges.test.ts",
  "src/http/ip-address.test.ts",
  "src/http/ip-address.edges.test.ts",
  "src/stores/memory/sketch.test.ts",
  "src/stores/memory/sketch.edges.test.ts",
  "src/stores/memory/capped.test.ts",
  "test/properties/decisions.test.ts",
  "test/properties/moves.test.ts",
  "test/properties/windows.test.ts",
  "test/properties/fresh-at.test.ts",
];
const only = process.env.SLUICE_MUTATE_TESTS?.split(",").filter((g) => g !== "");

// Spread, not mergeConfig: mergeConfig would append this include list to the base one.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: only !== undefined && only.length > 0 ? only : ALL,
    maxWorkers: 1,
    // Mutants are switched at run time (a global Stryker sets), so the sources need not be
    // re-imported for each one: reusing the module cache makes a mutant run several times faster.
    isolate: false,
    // Instrumented code on a loaded machine: the initial run's slowest tests need more than 20 s
    // (Stryker times each mutant from the initial run, not from this).
    testTimeout: 120_000,
    // Properties at a quarter of their runs (test/support/seed.ts): each mutant reruns them.
    env: { SLUICE_RUNS_SCALE: "0.25" },
  },
});

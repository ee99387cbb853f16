// The tests Stryker runs against each mutant (npm run mutate): only the fast unit and property
// tests of the mutated files, no Redis, cluster or server suites, so one run fits on one core.
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

// Spread, not mergeConfig: mergeConfig would append this include list to the base one.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "src/algorithms/*.test.ts",
      "src/core/decide-rule.test.ts",
      "src/core/composite.test.ts",
      "src/core/ban.test.ts",
      "src/core/rule.test.ts",
      "src/limiter.test.ts",
      "src/service.test.ts",
      "src/replay.test.ts",
      "src/core/spec.test.ts",
      "src/http/headers.test.ts",
      "src/http/client-key.test.ts",
      "src/http/ip-address.test.ts",
      "test/properties/decisions.test.ts",
      "test/properties/oracle.test.ts",
      "test/properties/moves.test.ts",
      "test/properties/windows.test.ts",
      "test/properties/fresh-at.test.ts",
    ],
    maxWorkers: 1,
    // Properties at a quarter of their runs (test/support/seed.ts): each mutant reruns them.
    env: { SLUICE_RUNS_SCALE: "0.25" },
  },
});

// npm run mutate: StrykerJS mutation testing of the core (docs/testing.md records the score).
// Not part of CI: a full run takes tens of minutes on one core.
// One file or group at a time fits a session on this shared machine (docs/testing.md):
//   SLUICE_MUTATE_TESTS=<test globs> npx stryker run --mutate <files>
// SLUICE_MUTATE_NAME names a run's sandbox and reports, so two runs can go side by side.
const name = process.env.SLUICE_MUTATE_NAME || "mutation";

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.stryker.config.ts" },
  plugins: ["@stryker-mutator/vitest-runner"],
  mutate: [
    "src/algorithms/*.ts",
    "!src/algorithms/*.test.ts",
    // Re-exports only.
    "!src/algorithms/index.ts",
    "src/core/decide-rule.ts",
    "src/core/ban.ts",
    "src/core/composite.ts",
    "src/core/rule.ts",
    "src/http/headers.ts",
    "src/http/client-key.ts",
    "src/http/ip-address.ts",
    "src/stores/memory/sketch.ts",
  ],
  // Stryker rewrites tsconfig.json's paths with TypeScript's JS API, which TypeScript 7 (the
  // native compiler) does not have. Our tsconfig.json points at nothing outside the project,
  // so there is nothing to rewrite: name a file that does not exist to skip that step.
  tsconfigFile: "stryker-skips-tsconfig.json",
  coverageAnalysis: "perTest",
  // The machine is shared: one test process at a time.
  concurrency: 1,
  // A mutant that loops (a retry search that never ends) is cut off soon after the test's own time.
  timeoutMS: 5000,
  reporters: ["clear-text", "progress-append-only", "html", "json"],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  tempDirName: name === "mutation" ? ".stryker-tmp" : `.stryker-tmp-${name}`,
  // Another run's sandbox (a second run with --tempDirName under reports/) is no source.
  ignorePatterns: [".stryker-tmp*", "reports"],
  cleanTempDir: "always",
  thresholds: { high: 95, low: 90, break: null },
};

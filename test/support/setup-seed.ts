/**
 * vitest setup file: seeds every fast-check property of the run (test/support/seed.ts) so that
 * a failure prints a seed that replays it exactly with `SLUICE_SEED=<seed>`. A property that
 * passes its own `seed` keeps it; none in this suite does.
 */
import fc from "fast-check";
import { vi } from "vitest";
import { SEED } from "./seed.ts";

const path = process.env.SLUICE_SEED_PATH;
fc.configureGlobal({
  seed: SEED,
  ...(path !== undefined && path !== "" ? { path } : {}),
  // Failures say which seed to replay with, in the form the environment takes.
  reporter: (details) => {
    if (!details.failed) return;
    const cause = details.errorInstance;
    throw new Error(
      `${fc.defaultReportMessage(details)}\nReplay: SLUICE_SEED=${details.seed} SLUICE_SEED_PATH=${details.counterexamplePath ?? ""}` +
        (cause instanceof Error ? `\n${cause.message}` : ""),
      { cause },
    );
  },
});

// Stores hash with a random seed by default (so no one can aim keys at one summary cell); in the
// suite that seed comes from SLUICE_SEED too, so a store built without `seed` replays exactly.
vi.mock(import("../../src/stores/compact/fingerprint.ts"), async (importOriginal) => {
  const original = await importOriginal();
  let state = SEED >>> 0;
  return {
    ...original,
    randomSeed: () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state;
    },
  };
});

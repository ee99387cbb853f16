/**
 * vitest setup file: seeds every fast-check property of the run (test/support/seed.ts) so that
 * a failure prints a seed that replays it exactly with `SLUICE_SEED=<seed>`. A property that
 * passes its own `seed` keeps it; none in this suite does.
 */
import fc from "fast-check";
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

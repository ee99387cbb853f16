/**
 * The one seed every property test runs from: `SLUICE_SEED` (an integer) or a fixed default.
 * fast-check prints `seed` and `path` on failure; `SLUICE_SEED=<seed>` replays that run
 * exactly (the same generated values in the same order), and `SLUICE_SEED_PATH=<path>` with it
 * jumps straight to the shrunk counter-example.
 */

/** The seed properties run with when SLUICE_SEED is not set. */
export const DEFAULT_SEED = 20_261_201;

/** Parses SLUICE_SEED (a 32-bit integer, as fast-check prints it); throws on anything else. */
export function seedFrom(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.SLUICE_SEED;
  if (text === undefined || text.trim() === "") return DEFAULT_SEED;
  const seed = Number(text);
  if (!Number.isSafeInteger(seed) || seed < -(2 ** 31) || seed >= 2 ** 32) {
    throw new Error(`SLUICE_SEED must be an integer as fast-check prints it (got ${JSON.stringify(text)})`);
  }
  return seed;
}

/** The seed of this run (SLUICE_SEED or the default). */
export const SEED = seedFrom();

/**
 * Scales a property's run count by `SLUICE_RUNS_SCALE` (default 1): mutation testing runs the
 * properties at a quarter of their runs, deeper searches at more. Never below 1.
 */
export function runs(n: number, env: NodeJS.ProcessEnv = process.env): number {
  const scale = Number(env.SLUICE_RUNS_SCALE ?? 1);
  return Math.max(1, Math.round(n * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

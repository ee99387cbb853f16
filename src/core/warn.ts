/**
 * The one way sluice reports a warning: `process.emitWarning` with a code (listeners, `--no-warnings`
 * and `--throw-deprecation` apply), or `console.warn` on runtimes without it (Vercel Edge,
 * Workers without `nodejs_compat`), so no warning can crash a request there.
 */

/** Emits `message` as a warning with `code` (e.g. `SLUICE_KEY_HASHED`). */
export function warn(message: string, code: string): void {
  const proc = (globalThis as { process?: { emitWarning?: (m: string, o: object) => void } }).process;
  if (typeof proc?.emitWarning === "function") proc.emitWarning(message, { type: "SluiceWarning", code });
  else console.warn(`(${code}) ${message}`);
}

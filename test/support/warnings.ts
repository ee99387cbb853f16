// The process warnings a piece of code emits: sluice reports through `process.emitWarning`, which
// delivers on the next tick, so the listener stays until one `setImmediate` after `fn` returns.

/** A warning as a listener sees it. */
export interface SeenWarning {
  /** The warning's code, e.g. `SLUICE_LIMITER_REUSE`. */
  code: string | undefined;
  /** Its message. */
  message: string;
}

/** Runs `fn` (sync or async) and returns the warnings emitted meanwhile, in order. */
export async function warningsOf(fn: () => unknown): Promise<SeenWarning[]> {
  const seen: SeenWarning[] = [];
  const on = (w: Error & { code?: string }) => seen.push({ code: w.code, message: w.message });
  process.on("warning", on);
  try {
    await fn();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off("warning", on);
  }
  return seen;
}

/**
 * Long synchronous work (building and applying a config of many thousand descriptors) run in
 * slices: the work is a generator that yields after each small step, and between slices the
 * event loop gets a turn, so checks, gRPC calls and `/healthz` keep being answered meanwhile.
 */

/** Steps run between two turns of the event loop. */
export const SLICE_STEPS = 256;

/** Progress of a sliced run: the steps done so far. */
export type SliceProgress = (done: number) => void;

/**
 * Runs `steps` to the end, `every` steps at a time, giving the event loop a turn (setImmediate:
 * pending I/O is handled first) between slices; resolves with what the generator returns.
 */
export async function runSliced<T, Y = unknown>(
  steps: Generator<Y, T, undefined>,
  progress?: SliceProgress,
  every = SLICE_STEPS,
): Promise<T> {
  let done = 0;
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    done++;
    if (done % every === 0) {
      progress?.(done);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** `steps`, returning how many it yielded (the progress of the next ones starts there). */
export function* counted(steps: Generator<unknown>): Generator<void, number, undefined> {
  let n = 0;
  for (const _ of steps) {
    n++;
    yield;
  }
  return n;
}

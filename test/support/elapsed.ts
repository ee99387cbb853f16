/**
 * Bounds for figures a service computes from its own real clock. A sliding log's `t=` and
 * Retry-After count down from an entry's time, so a run slowed between two requests (by a
 * second or more on a loaded machine) sees them a second or more lower: a test asserting the
 * figure of a fast run fails by chance. The bound below follows from the elapsed real time the
 * test measured around the requests instead, and is the exact figure when the run was fast.
 */

/** Starts a stopwatch: the returned function gives the real ms elapsed since this call. */
export function stopwatch(): () => number {
  const started = performance.now();
  return () => performance.now() - started;
}

/**
 * The fewest whole seconds (rounded up, as `t=` and Retry-After are) the service can report
 * left of `windowMs` for an entry it recorded within a span this process measured as
 * `elapsedMs`: the service reads an integer-ms clock twice, so it sees less than `elapsedMs` + 1.
 */
export function leastSecondsLeft(windowMs: number, elapsedMs: number): number {
  return Math.ceil((windowMs - elapsedMs - 1) / 1000);
}

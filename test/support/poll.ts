/**
 * Real-time bounds for tests that poll for an asynchronous event (a pub/sub message delivered, a
 * subscription live, a server back). A bound counted in iterations of a short sleep is a bound
 * of a second or two of real time, which a loaded machine (two suites on two cores) can spend
 * before the event without anything being wrong; a poll bounded by a deadline this generous
 * still ends, and still fails, when the event never comes.
 */

/** How long a poll waits for its event before the test gives up on it. */
export const POLL_DEADLINE_MS = 20_000;

/** Returns a function that is true until `ms` of real time have passed since this call. */
export function within(ms: number = POLL_DEADLINE_MS): () => boolean {
  const end = performance.now() + ms;
  return () => performance.now() < end;
}

/**
 * The database's clock as this process sees it (`time: "database"`). Every statement answers
 * the server's `clock_timestamp()`; the offset to this process's monotonic clock is taken at
 * the midpoint of the round trip, so a call that decides before its first statement (on a row
 * it already knows) decides on the server's time within half a round trip, and a call that had
 * to read decides on the time the server gave it exactly. Processes with skewed system clocks
 * thus agree to within a round trip, not the skew.
 */

/** Local ms since the epoch, monotonic (never steps back with the system clock). */
export function local(): number {
  return performance.timeOrigin + performance.now();
}

/** An estimate of the database's clock, kept by every statement's answer. */
export class DatabaseClock {
  #offset: number | undefined;

  /** True once a statement has answered (before that, calls read first). */
  get known(): boolean {
    return this.#offset !== undefined;
  }

  /** Learns the offset from a statement sent at `sentAt` (a {@link local} instant) that answered `serverNow`. */
  heard(serverNow: number, sentAt: number): void {
    this.#offset = serverNow - (sentAt + local()) / 2;
  }

  /** The database's time now, in whole ms (0 offset until a statement answered). */
  now(): number {
    return Math.floor(local() + (this.#offset ?? 0));
  }
}

/**
 * Instants kept in shared 64-bit words (whole ms) that only ever move forward: a word is raised
 * by compare-and-swap, so threads raising it at once all land and the largest wins. Used for a
 * rule's latest block end (registry.ts), a filter generation's latest fresh-at per rule
 * (summary-filter.ts) and the latest instant any thread decided a rule at (summary.ts).
 */

/** A word that holds no instant yet. */
export const NO_INSTANT = -(2n ** 62n);
/** The latest instant a word keeps (a later one, Infinity, or NaN is kept as this: never past). */
const FOREVER = 2 ** 62;

/** Raises `W[at]` to at least `instant` (rounded up to whole ms). */
export function raiseInstant(W: BigInt64Array, at: number, instant: number): void {
  const kept = BigInt(Math.ceil(Number.isNaN(instant) ? FOREVER : Math.min(Math.max(instant, -FOREVER), FOREVER)));
  for (;;) {
    const seen = Atomics.load(W, at);
    if (seen >= kept || Atomics.compareExchange(W, at, seen, kept) === seen) return;
  }
}

/** The instant in `W[at]` (-Infinity when none). */
export function readInstant(W: BigInt64Array, at: number): number {
  const word = Atomics.load(W, at);
  return word === NO_INSTANT ? Number.NEGATIVE_INFINITY : Number(word);
}

/**
 * Counting what a property exercised. A property that filters or returns early can pass while
 * checking nothing; each one counts the runs (or events) that reached its assertions, by
 * label, and fails afterwards, with that message, if a label was reached too rarely. With the
 * run seeded (test/support/seed.ts) the counts, and so the verdict, are the same every run.
 */
import { expect } from "vitest";
import { runs } from "./seed.ts";

/** Counts by label. */
export class Counted {
  readonly counts = new Map<string, number>();

  /** Counts one `label`. */
  hit(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  }

  /** How many times `label` was counted. */
  get(label: string): number {
    return this.counts.get(label) ?? 0;
  }

  /**
   * Fails unless every label in `minimums` was counted at least that often (minimums are for
   * the full run count: scaled like it, see `runs`).
   */
  expectAtLeast(minimums: Record<string, number>): void {
    for (const [label, full] of Object.entries(minimums)) {
      const min = Math.floor(runs(full) * 0.8);
      expect(
        this.get(label),
        `the property exercised "${label}" only ${this.get(label)} times (needs ${min}): ${JSON.stringify(Object.fromEntries(this.counts))}`,
      ).toBeGreaterThanOrEqual(min);
    }
  }
}

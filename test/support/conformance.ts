/**
 * Registers the conformance kit's cases (sluice/testing) as vitest tests. A case the kit skips
 * shows its reason in the test name; a known gap (a store failing a case, reported and not yet
 * fixed) runs as `it.fails` with the reason in its name, so fixing the store fails the test
 * until the gap is removed here.
 */
import type { ConformanceCase } from "sluice/testing";
import { it } from "vitest";

/** Known gaps: the case name after "<store>: ", and why the store fails it. */
export type KnownGaps = Record<string, string>;

/** One vitest test per case. */
export function runCases(cases: ConformanceCase[], gaps: KnownGaps = {}): void {
  const unused = new Set(Object.keys(gaps));
  for (const c of cases) {
    const gap = Object.entries(gaps).find(([name]) => c.name.endsWith(`: ${name}`));
    if (c.skip !== undefined) it.skip(`${c.name} (skipped: ${c.skip})`, () => c.run());
    else if (gap !== undefined) {
      unused.delete(gap[0]);
      it.fails(`${c.name} (KNOWN GAP: ${gap[1]})`, () => c.run());
    } else it(c.name, () => c.run());
  }
  if (unused.size > 0) throw new Error(`known gaps that match no case: ${[...unused].join("; ")}`);
}

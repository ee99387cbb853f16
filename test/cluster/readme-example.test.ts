// The README's node:cluster example, run as written (as a file: node:cluster forks the file
// itself) against the built package: 4 workers × 5 attempts, exactly 10 allowed in total.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

/** The first ```js block after `heading` in README.md. */
function blockAfter(heading: string): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const from = readme.indexOf(heading);
  expect(from).toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(from));
  expect(block).not.toBeNull();
  return (block as RegExpExecArray)[1] as string;
}

describe("README: One machine, many processes", () => {
  it("the example runs as written and admits exactly the limit across 4 workers", () => {
    ensureBuilt();
    // Inside the package (git- and lint-ignored), so `import "sluice/cluster"` resolves to the built exports.
    const dir = join(ROOT, "test-artifacts");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `readme-cluster-${process.pid}.mjs`);
    writeFileSync(file, blockAfter("## One machine, many processes"));
    try {
      const out = execFileSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
      const lines = out.trim().split("\n");
      expect(lines).toHaveLength(4);
      const allowed = lines.map((line) => Number(/: (\d+) of 5 allowed$/.exec(line)?.[1]));
      expect(allowed.reduce((a, b) => a + b, 0)).toBe(10);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
